# expect: backward-through-graph-twice detach-carried-state
import torch
from torch import nn

model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _step in range(2):
    out = torch.sigmoid(model(torch.randn(3, 4)))
    loss_a = out[:, 0].mean()
    loss_b = out[:, 1].mean()
    opt.zero_grad()
    loss_a.backward()  # cause
    loss_b.backward()
    opt.step()
