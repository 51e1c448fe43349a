"""Root cause: the learning rate (the LEARNING_RATE constant, 0.02) is too high for SGD + momentum.

The model is written functionally (plain tensors and ``F.linear``, no nn.Module). With momentum
0.9 the effective step is ten times ``lr``; on inputs with a standard deviation of 3 every update
overshoots, the loss grows by orders of magnitude step over step and overflows to inf after
about ten steps. A learning rate of 1e-3 trains fine.
"""

import torch
import torch.nn.functional as F

LEARNING_RATE = 0.02
MOMENTUM = 0.9
STEPS = 50

torch.manual_seed(11)
inputs = torch.randn(256, 12) * 3.0
true_w = torch.randn(1, 12)
targets = inputs @ true_w.T + 0.1 * torch.randn(256, 1)

w1 = (torch.randn(32, 12) * 0.2).requires_grad_()
b1 = torch.zeros(32, requires_grad=True)
w2 = (torch.randn(1, 32) * 0.2).requires_grad_()
b2 = torch.zeros(1, requires_grad=True)
params = [w1, b1, w2, b2]
optimizer = torch.optim.SGD(params, lr=LEARNING_RATE, momentum=MOMENTUM)


def predict(x: torch.Tensor) -> torch.Tensor:
    return F.linear(F.softplus(F.linear(x, w1, b1)), w2, b2)


for step in range(STEPS):
    batch = torch.arange(step * 32, step * 32 + 32) % 256
    optimizer.zero_grad()
    loss = F.mse_loss(predict(inputs[batch]), targets[batch])
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
