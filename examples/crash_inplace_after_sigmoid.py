"""Root cause: the gate's sigmoid output is shifted in place (``gate += 0.5``) after sigmoid saved
it for backward, so loss.backward() finds the saved tensor changed and raises.

A small gated MLP regression. ``gate = gate + 0.5`` (out of place) fixes it.
"""

import torch
from torch import nn

torch.manual_seed(0)


class GatedMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.value = nn.Linear(6, 16)
        self.gate = nn.Linear(6, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        gate = torch.sigmoid(self.gate(x))
        gate += 0.5
        return self.out(torch.tanh(self.value(x)) * gate)


inputs = torch.randn(128, 6)
targets = inputs[:, :2].sum(dim=1, keepdim=True)
model = GatedMLP()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(20):
    batch = slice(32 * (step % 4), 32 * (step % 4) + 32)
    loss = nn.functional.mse_loss(model(inputs[batch]), targets[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
