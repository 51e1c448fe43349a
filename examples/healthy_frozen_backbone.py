"""Healthy: a backbone frozen on purpose (requires_grad=False) and left out of the optimizer; the head learns.

No root cause: this script must produce no event and no fix.
"""

import torch
from torch import nn

torch.manual_seed(21)
x = torch.randn(800, 20)
y = x[:, :4].argmax(dim=1)
backbone = nn.Sequential(nn.Linear(20, 64), nn.ReLU())
head = nn.Linear(64, 4)
backbone.requires_grad_(False)
model = nn.Sequential(backbone, head)
optimizer = torch.optim.Adam(head.parameters(), lr=3e-3)
for _step in range(200):
    idx = torch.randint(0, 800, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
print("final", loss.item())
