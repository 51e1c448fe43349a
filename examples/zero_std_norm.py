"""Root cause: a custom normalisation divides by a standard deviation that is exactly 0.

``FeatureNorm`` standardises each feature over the batch as ``(x - mean) / std`` with no epsilon.
One input column is a constant (a sensor stuck at 1.0), so its std is 0 and the division gives
0/0 = nan in the very first forward pass. Adding an eps to the denominator (as BatchNorm does)
removes it.
"""

import torch
from torch import nn


class FeatureNorm(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=0, keepdim=True)
        std = x.std(dim=0, keepdim=True)
        return (x - mean) / std


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = FeatureNorm()
        self.body = nn.Sequential(nn.Linear(6, 24), nn.GELU(), nn.Linear(24, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.norm(x))


torch.manual_seed(3)
data = torch.randn(300, 6)
data[:, 4] = 1.0  # a stuck sensor: this column never changes
target = torch.randint(0, 3, (300,))

net = Net()
opt = torch.optim.RMSprop(net.parameters(), lr=1e-3)
for step in range(20):
    sl = slice(step * 15 % 300, step * 15 % 300 + 15)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(net(data[sl]), target[sl])
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4g}")
