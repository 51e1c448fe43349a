"""Healthy: SGD with momentum and a strong L2 weight decay (lr 0.1 x 0.05 per step) on a task
whose gradients outweigh it; the loss falls well below its start.

No root cause: this script must produce no event and no fix.
"""

import torch
from torch import nn

torch.manual_seed(5)
x = torch.randn(1024, 10)
y = (x[:, :3].sum(1) > 0).long()
model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=0.05)
for step in range(300):
    idx = torch.randint(0, 1024, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        print(step, round(loss.item(), 4))
print("final", loss.item())
