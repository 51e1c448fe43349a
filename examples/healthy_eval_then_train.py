"""Healthy: each epoch trains in train mode and validates in eval mode under no_grad, switching back.

No root cause: this script must produce no event and no fix.
"""

import torch
from torch import nn

torch.manual_seed(23)
x = torch.randn(800, 10) * 3 + 1
y = (x[:, 0] > 1).long()
model = nn.Sequential(
    nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 2)
)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(4):
    model.train()
    for i in range(0, 800, 40):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i : i + 40]), y[i : i + 40])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    print(epoch, loss.item(), accuracy)
