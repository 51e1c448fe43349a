# expect: graph-cut-before-backward restore-gradient-flow
import torch
from torch import nn


def run():
    reg = nn.Linear(2, 1)
    opt = torch.optim.SGD(reg.parameters(), lr=0.01)
    for _ in range(3):
        x = torch.randn(8, 2)
        err = (reg(x) - x.sum(1, keepdim=True)).pow(2).mean()
        total = torch.tensor(err.item() + 0.0)  # cause
        opt.zero_grad()
        total.backward()
        opt.step()


run()
