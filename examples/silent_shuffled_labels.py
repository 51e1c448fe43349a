"""Root cause: inputs and labels are shuffled with two different permutations, so no label belongs to its input.

The loss stays at ln(10), the chance level, however the model trains.
"""

import torch
from torch import nn

torch.manual_seed(10)
images = torch.randn(2000, 32)
labels = images[:, :10].argmax(dim=1)
images = images[torch.randperm(len(images))]
labels = labels[torch.randperm(len(labels))]

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(5):
    for i in range(0, 2000, 64):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[i : i + 64]), labels[i : i + 64])
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
