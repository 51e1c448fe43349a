# expect: shape-mismatch fix-layer-size
import torch
from torch import nn

reg = nn.Linear(4, 3)  # cause
opt = torch.optim.SGD(reg.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 2)
loss = nn.functional.mse_loss(reg(x), y)
loss.backward()
opt.step()
