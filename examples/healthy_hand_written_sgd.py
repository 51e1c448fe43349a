"""Healthy: plain SGD written by hand (no torch.optim), updating the weights under no_grad.

No root cause: this script must produce no event and no fix.
"""

import torch

torch.manual_seed(28)
x = torch.randn(512, 6)
y = x @ torch.tensor([[1.0], [-2.0], [0.5], [0.0], [1.5], [-1.0]]) + 0.3
w = torch.zeros(6, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for _step in range(200):
    idx = torch.randint(0, 512, (32,))
    loss = ((x[idx] @ w + b - y[idx]) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            p -= 0.05 * p.grad
            p.grad = None
print("final", loss.item())
