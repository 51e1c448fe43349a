"""Root cause: the hidden layers are kept in a plain Python list, so the optimizer never sees them.

`self.hidden = [nn.Linear(...), ...]` does not register the layers: model.parameters() holds
only the input and output layers, and the hidden ones keep their random weights.
"""

import torch
from torch import nn


class DeepMLP(nn.Module):
    def __init__(self, width: int = 32, depth: int = 3) -> None:
        super().__init__()
        self.inp = nn.Linear(8, width)
        self.hidden = [nn.Linear(width, width) for _ in range(depth)]
        self.out = nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.inp(x))
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.out(x)


torch.manual_seed(2)
x = torch.randn(600, 8)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
model = DeepMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for _step in range(60):
    idx = torch.randint(0, 600, (32,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4f}")
