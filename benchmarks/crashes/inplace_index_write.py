# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
from torch import nn

proj = nn.Linear(4, 4)
opt = torch.optim.SGD(proj.parameters(), lr=0.1)
for _step in range(2):
    h = torch.exp(proj(torch.randn(3, 4)))
    h[:, 0] = 0  # cause
    loss = h.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
