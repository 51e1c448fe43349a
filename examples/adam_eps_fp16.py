"""Root cause: Adam's eps=1e-8 rounds to 0 in float16, so its update divides by zero.

The model's parameters are stored in float16 and Adam keeps its state in the same dtype. The
smallest positive fp16 number is ~6e-8, so ``eps=1e-8`` is exactly 0 and ``grad ** 2`` of the
small gradients underflows to 0 as well: for a parameter whose squared gradient is 0, the update
``exp_avg / (sqrt(exp_avg_sq) + eps)`` is 0/0 = nan (or x/0 = inf). An eps that fp16 can hold
(1e-4), or float32 master weights with autocast, avoids it.
"""

import torch
from torch import nn

torch.manual_seed(7)


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(32, 32)
        self.score = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.score(torch.tanh(self.proj(x)))


model = Scorer().half()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-8)

x = torch.randn(128, 32).half()
y = (x[:, :1] * 0.01).half()  # small targets: small gradients

for step in range(40):
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
