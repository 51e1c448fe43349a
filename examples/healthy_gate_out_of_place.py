"""A healthy look-alike of crash_inplace_after_sigmoid.py: the gate is shifted out of place
(``gate = gate + 0.5``), so the tensor sigmoid saved for backward is left as it was.
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
        gate = gate + 0.5
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
