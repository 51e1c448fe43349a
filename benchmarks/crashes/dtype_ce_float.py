# expect: dtype-mismatch cast-dtype
import torch
from torch import nn


class Clf(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))

    def forward(self, x):
        return self.net(x)


clf = Clf()
opt = torch.optim.SGD(clf.parameters(), lr=0.1)
xs = torch.randn(9, 4)
ys = torch.randint(0, 3, (9,)).float()
for _step in range(2):
    loss = nn.functional.cross_entropy(clf(xs), ys)  # cause
    opt.zero_grad()
    loss.backward()
    opt.step()
