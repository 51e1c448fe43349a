"""A healthy look-alike of crash_labels_from_one.py: the labels run 0..9, one per output of the
ten-class head.
"""

import torch
from torch import nn

torch.manual_seed(0)

features = torch.randn(200, 8)
labels = (features[:, 0] * 2).round().clamp(-4, 5).long() + 4  # 0..9
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(20):
    batch = slice(40 * (step % 5), 40 * (step % 5) + 40)
    loss = nn.functional.cross_entropy(model(features[batch]), labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
