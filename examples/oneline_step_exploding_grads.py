"""Root cause: exploding gradients in a deep LeakyReLU MLP trained without gradient clipping.

The whole optimizer step is written on one line, as in many short research scripts:
``opt.zero_grad(); loss.backward(); opt.step()``. Ten Linear layers initialised with a gain of
~1.7 multiply the gradient at every layer on the way back, so the first gradients are already
huge and the SGD + momentum update throws the weights out until the loss overflows. A clip
between ``backward()`` and ``step()`` bounds every update.
"""

import torch
from torch import nn

torch.manual_seed(3)

layers = []
for _ in range(10):
    layer = nn.Linear(32, 32)
    nn.init.normal_(layer.weight, std=0.3)
    layers += [layer, nn.LeakyReLU(0.5)]
model = nn.Sequential(*layers, nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x, y = torch.randn(64, 32), torch.randn(64, 1)

for step in range(40):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()  # noqa: E702  # fmt: skip
    print(f"step {step} loss {loss.item():.4g}")
