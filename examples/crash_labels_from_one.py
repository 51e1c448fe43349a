"""Root cause: the labels run 1..10 (counted from 1) while the head has 10 outputs (classes
0..9), so cross_entropy meets target 10: "Target 10 is out of bounds".

A ten-class MLP on synthetic features whose labels were read from a file that numbers classes
from 1. ``labels - 1`` fixes it.
"""

import torch
from torch import nn

torch.manual_seed(0)

features = torch.randn(200, 8)
labels = (features[:, 0] * 2).round().clamp(-4, 5).long() + 5  # 1..10, as the file numbers them
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(20):
    batch = slice(40 * (step % 5), 40 * (step % 5) + 40)
    loss = nn.functional.cross_entropy(model(features[batch]), labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
