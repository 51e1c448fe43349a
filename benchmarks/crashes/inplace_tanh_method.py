# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
from torch import nn

w = nn.Parameter(torch.randn(4, 4))
opt = torch.optim.Adam([w])
for _step in range(3):
    x = torch.randn(2, 4)
    h = torch.tanh(x @ w)
    h.mul_(3)  # cause
    loss = h.pow(2).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
