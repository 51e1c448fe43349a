"""A learning rate far too high: every SGD step overshoots until the weights blow up."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e4)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
for _step in range(50):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
