# expect: shape-mismatch fix-layer-size
import torch
from torch import nn

net = nn.Sequential(
    nn.Conv2d(3, 16, 5),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(16 * 16 * 16, 10),  # cause
)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for _ in range(2):
    loss = nn.functional.cross_entropy(net(torch.randn(4, 3, 32, 32)), torch.randint(0, 10, (4,)))
    opt.zero_grad()
    loss.backward()
    opt.step()
