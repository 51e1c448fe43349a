"""A healthy mixed-precision run: GradScaler skips the first steps (scale too high), then trains."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**30)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for _step in range(25):
    with torch.autocast("cpu", dtype=torch.float16):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
print(f"final loss {loss.item():.4f} scale {scaler.get_scale()}")
