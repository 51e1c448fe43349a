# expect: shape-mismatch fix-layer-size
import torch
from torch import nn

model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(32, 1))  # cause
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _i in range(3):
    pred = model(torch.randn(8, 10))
    loss = (pred - 1).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
