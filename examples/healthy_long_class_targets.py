"""A healthy look-alike of crash_float_class_targets.py: the labels are built from Python ints,
so they are long, as cross_entropy needs.
"""

import torch
from torch import nn

torch.manual_seed(0)

centers = torch.tensor([[2.0, 0.0], [-2.0, 0.0], [0.0, 2.0]])
classes = [i % 3 for i in range(90)]
points = centers[classes] + 0.5 * torch.randn(90, 2)
labels = torch.tensor(classes)
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
