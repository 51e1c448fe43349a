"""A custom normalisation layer divides by a standard deviation that is exactly zero."""

import torch
from torch import nn

torch.manual_seed(0)


class FeatureNorm(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=0, keepdim=True)
        std = x.std(dim=0, keepdim=True)
        return (x - mean) / std


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = FeatureNorm()
        self.fc = nn.Linear(5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(x))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    x = torch.randn(16, 5)
    if step == 2:
        x[:, 3] = 1.0  # a constant feature in this batch
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
