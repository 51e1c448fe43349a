"""Root cause: the class labels are built as a float tensor (``dtype=torch.float32``), and
cross_entropy with class indices needs them as long: "expected target dtype to be Long".

A three-class classifier on synthetic blobs. ``labels.long()`` where the loss gets them (or
building the labels as long) fixes it.
"""

import torch
from torch import nn

torch.manual_seed(0)

centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
classes = [i % 3 for i in range(90)]
points = centers[classes] + 0.5 * torch.randn(90, 2)
labels = torch.tensor(classes, dtype=torch.float32)
model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(20):
    batch = slice(30 * (step % 3), 30 * (step % 3) + 30)
    loss = criterion(model(points[batch]), labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
