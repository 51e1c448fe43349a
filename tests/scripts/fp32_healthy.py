"""A healthy fp32 run: must end clean."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(inplace=True), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for _step in range(20):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
print(f"final loss {loss.item():.4f}")
