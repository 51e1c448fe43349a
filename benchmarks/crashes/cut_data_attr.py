# expect: graph-cut-before-backward restore-gradient-flow
import torch
from torch import nn

lin = nn.Linear(3, 3)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
x = torch.randn(2, 3)
y = lin(x).data  # cause
loss = y.sum()
loss.backward()
opt.step()
