# expect: graph-cut-before-backward restore-gradient-flow
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.body(x)).detach()  # cause


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
pred = net(torch.randn(3, 4))
loss = pred.pow(2).mean()
loss.backward()
opt.step()
