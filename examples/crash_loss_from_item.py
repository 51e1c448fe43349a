"""Root cause: the loss is rebuilt from a Python float (``torch.tensor(mse.item())``), which has
no graph, so loss.backward() raises "element 0 of tensors does not require grad".

A small regression MLP whose author wanted the loss as a float for logging. Keeping the loss
tensor (and logging ``loss.item()``) fixes it.
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
    loss = torch.tensor(mse.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
