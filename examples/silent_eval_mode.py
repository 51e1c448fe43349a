"""Root cause: model.eval() is called once before training and model.train() never, so dropout and batch norm run in eval mode.

Batch norm never learns its statistics and dropout never regularises.
"""

import torch
from torch import nn


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, 2)
    )


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


torch.manual_seed(12)
x = torch.randn(800, 10) * 3 + 1
y = (x[:, 0] > 1).long()
model = make_model()
print("before training:", evaluate(model, x, y))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(3):
    for i in range(0, 800, 40):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[i : i + 40]), y[i : i + 40])
        loss.backward()
        optimizer.step()
    print("epoch", epoch, evaluate(model, x, y))
