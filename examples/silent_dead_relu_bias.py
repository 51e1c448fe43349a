"""Root cause: every Linear bias is initialised to -4, so each ReLU's input is negative for every sample: the units output 0 and pass no gradient.

A custom init meant to make the activations sparse.
"""

import torch
from torch import nn

torch.manual_seed(21)
x = torch.randn(2000, 20)
y = (x[:, :5].sum(dim=1) > 0).long() + (x[:, 5] > 0.5).long()

model = nn.Sequential(
    nn.Linear(20, 128),
    nn.ReLU(),
    nn.Linear(128, 128),
    nn.ReLU(),
    nn.Linear(128, 3),
)
for layer in model.modules():
    if isinstance(layer, nn.Linear):
        nn.init.constant_(layer.bias, -4.0)

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
