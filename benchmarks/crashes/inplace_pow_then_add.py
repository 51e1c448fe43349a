# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
from torch import nn


class Poly(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)

    def forward(self, x):
        y = self.a(x)
        z = y.pow(2)
        y.add_(1)  # cause
        return (z * y).sum()


p = Poly()
opt = torch.optim.SGD(p.parameters(), lr=0.01)
loss = p(torch.randn(2, 3))
loss.backward()
opt.step()
