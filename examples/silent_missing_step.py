"""Root cause: optimizer.step() is never called: the loop computes gradients and throws them away.

A functional-style training loop whose step call was lost in a refactor.
"""

import torch
import torch.nn.functional as F

torch.manual_seed(6)
w1 = torch.randn(10, 32, requires_grad=True)
b1 = torch.zeros(32, requires_grad=True)
w2 = torch.randn(32, 1, requires_grad=True)
optimizer = torch.optim.Adam([w1, b1, w2], lr=1e-2)
x = torch.randn(400, 10)
y = x[:, :1] * 2 - x[:, 1:2]


def forward(inputs: torch.Tensor) -> torch.Tensor:
    return F.relu(inputs @ w1 + b1) @ w2


for _step in range(40):
    idx = torch.randint(0, 400, (32,))
    optimizer.zero_grad()
    loss = F.mse_loss(forward(x[idx]), y[idx])
    loss.backward()
print(f"loss {loss.item():.4f}")
