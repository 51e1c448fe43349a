"""Root cause: raw 0-255 pixel values go straight into a tanh network, which saturates and cannot learn.

The images were never divided by 255 (nor normalised by mean and std).
"""

import torch
from torch import nn

torch.manual_seed(11)
pixels = torch.randint(0, 256, (1200, 64)).float()
labels = (pixels[:, :32].mean(dim=1) > pixels[:, 32:].mean(dim=1)).long()
model = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
for epoch in range(4):
    for i in range(0, 1200, 32):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(pixels[i : i + 32]), labels[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
