"""Healthy: Adam at its usual lr 1e-3 behind a hand-written linear warmup over 20 steps.

The look-alike of hand_warmup_high_lr.py: the same loop that sets ``param_group["lr"]`` each
step, with a peak lr that trains. The loss falls steadily; nothing here needs a fix.
"""

import torch
from torch import nn

PEAK_LR = 1e-3
WARMUP = 20

torch.manual_seed(0)
x = torch.randn(256, 16)
y = x @ torch.randn(16, 1)
model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=PEAK_LR)
for step in range(60):
    for group in optimizer.param_groups:
        group["lr"] = PEAK_LR * min(1.0, (step + 1) / WARMUP)
    idx = torch.randint(0, 256, (32,))
    optimizer.zero_grad()
    loss = ((model(x[idx]) - y[idx]) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step} lr {optimizer.param_groups[0]['lr']:.3g} loss {loss.item():.4g}")
