"""Healthy: linear warmup then cosine decay to zero over the whole run, stepped per batch as written.

No root cause: this script must produce no event and no fix.
"""

import math

import torch
from torch import nn

STEPS = 200
WARMUP = 20
torch.manual_seed(24)
x = torch.randn(1024, 8)
y = (x[:, 0] * 2 - x[:, 1] > 0).long()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)


def schedule(step: int) -> float:
    if step < WARMUP:
        return (step + 1) / WARMUP
    return 0.5 * (1 + math.cos(math.pi * (step - WARMUP) / (STEPS - WARMUP)))


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
for _step in range(STEPS):
    idx = torch.randint(0, 1024, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    scheduler.step()
print("final", loss.item())
