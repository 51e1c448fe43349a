"""Root cause: a hand-written SGD loop (no torch.optim) takes sqrt of a mean square that is
exactly 0 from step 40, and the gradient of sqrt at 0 is inf.

The weights are updated by hand under no_grad, so each backward pass is a step. The loss is a
root-mean-square error written as `sqrt(mean(err ** 2))`; from step 40 the targets are the
model's own (detached) predictions, so the error is exactly 0: the weights' gradients are nan
at step 40, not at step 0.
Fix: guard the sqrt (`torch.sqrt(mse + 1e-8)`).
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
x = torch.randn(128, 4)
y = x.sum(dim=1, keepdim=True)
for step in range(100):
    pred = model(x)
    target = y if step < 40 else pred.detach()
    loss = torch.sqrt(((pred - target) ** 2).mean())
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.05 * p.grad
            p.grad.zero_()
print("final", loss.item())
