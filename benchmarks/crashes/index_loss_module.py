# expect: index-out-of-range fix-label-range
import torch
from torch import nn


def batches():
    for _i in range(3):
        yield torch.randn(4, 3), torch.tensor([0, 1, 2, 3])  # cause


net = nn.Linear(3, 3)
crit = nn.CrossEntropyLoss()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for x, y in batches():
    loss = crit(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
