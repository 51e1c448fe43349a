"""A healthy look-alike of crash_loss_from_item.py: the loss tensor itself goes to backward, and
only the printed number is taken with .item().
"""

import torch
from torch import nn

torch.manual_seed(0)

inputs = torch.randn(96, 4)
targets = inputs @ torch.tensor([[1.0], [-2.0], [0.5], [0.0]])
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(20):
    batch = slice(32 * (step % 3), 32 * (step % 3) + 32)
    mse = nn.functional.mse_loss(model(inputs[batch]), targets[batch])
    loss = mse
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
