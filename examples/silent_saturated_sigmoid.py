"""Root cause: a 10-layer sigmoid MLP initialised with std 3: the pre-activations lie far in sigmoid's flat tails and the gradient vanishes on its way to the first layers.

Written before ReLUs and residual connections were the norm.
"""

import torch
from torch import nn

torch.manual_seed(22)
x = torch.randn(2000, 32)
y = (x[:, :8].sum(dim=1) > 0).long()

layers: list[nn.Module] = [nn.Linear(32, 128), nn.Sigmoid()]
for _ in range(9):
    layers += [nn.Linear(128, 128), nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Linear(128, 2))
for layer in model.modules():
    if isinstance(layer, nn.Linear):
        nn.init.normal_(layer.weight, std=3.0)

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
