# expect: graph-cut-before-backward restore-gradient-flow
import torch
from torch import nn

model = nn.Sequential(nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(3):
    x, y = torch.randn(6, 5), torch.randn(6, 1)
    with torch.no_grad():
        pred = model(x)  # cause
    loss = nn.functional.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
