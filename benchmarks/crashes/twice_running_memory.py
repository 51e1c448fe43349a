# expect: backward-through-graph-twice detach-carried-state
import torch
from torch import nn

cell = nn.RNNCell(3, 5)
readout = nn.Linear(5, 1)
opt = torch.optim.SGD([*cell.parameters(), *readout.parameters()], lr=0.01)
memory = torch.zeros(2, 5)
for _t in range(5):
    memory = cell(torch.randn(2, 3), memory)  # cause
    loss = readout(memory).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
