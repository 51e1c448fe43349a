"""Root cause: none. A 12-block residual MLP with tanh and layer norm: deep, yet the gradient reaches the first layer at scale and it learns.

The look-alike of a deep net whose gradient vanishes.
"""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.f = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.Tanh())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.f(x)


torch.manual_seed(23)
x = torch.randn(2000, 32)
y = (x[:, :8].sum(dim=1) > 0).long()
model = nn.Sequential(nn.Linear(32, 128), *[Block(128) for _ in range(12)], nn.Linear(128, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(120):
    idx = torch.randint(0, 2000, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    if step % 40 == 0:
        print(f"step {step} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}")
