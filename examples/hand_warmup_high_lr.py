"""Root cause: lr 20.0 for Adam (20000x its usual 1e-3) behind a hand-written linear warmup.

The loop ramps ``param_group["lr"]`` from 1/20 of the peak up to 20.0 over its first 20 steps,
so there is a warmup, only no scheduler object. Even the first rungs of the ramp are far too
large for Adam (each update moves every weight by about the lr), so the run diverges while still
warming up: a longer warmup cannot help, the peak lr itself must come down.
"""

import torch
from torch import nn

PEAK_LR = 20.0
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
    loss = ((model(x[idx]) - y[idx]) ** 2).mean().exp()
    loss.backward()
    optimizer.step()
    print(f"step {step} lr {optimizer.param_groups[0]['lr']:.3g} loss {loss.item():.4g}")
