"""A healthy CUDA mixed-precision run: GradScaler skips the first steps (scale too high), then trains."""

import torch
from torch import nn

torch.manual_seed(0)
device = "cuda"
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler(device, init_scale=2.0**30)
x = torch.randn(64, 8, device=device)
y = x.sum(dim=1, keepdim=True)
for _step in range(25):
    with torch.autocast(device, dtype=torch.float16):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
print(f"final loss {loss.item():.4f} scale {scaler.get_scale()}")
