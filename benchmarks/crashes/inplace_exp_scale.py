# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
from torch import nn


class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 5)

    def forward(self, x):
        e = torch.exp(self.lin(x))
        e /= 2  # cause
        return e.sum(1)


m = Scorer()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for _ in range(2):
    loss = m(torch.randn(3, 5)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
