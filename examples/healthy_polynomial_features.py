"""Healthy: a polynomial fitted on raw powers of x (x, x^2, x^3, x^4), which reach the hundreds.

Look-alike of silent_raw_pixels.py: the model's inputs are far from unit scale (mean ~5, std
~25, maximum over 200), yet the loss falls by orders of magnitude, so the inputs' scale does
not stop it from learning and there is nothing to report.
"""

import torch
from torch import nn

POLY_DEGREE = 4
torch.manual_seed(1)
W_TARGET = torch.randn(POLY_DEGREE, 1) * 2
B_TARGET = torch.randn(1) * 2


def make_features(x):
    """The columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x**i for i in range(1, POLY_DEGREE + 1)], 1)


def get_batch(batch_size=32):
    x = make_features(torch.randn(batch_size) * 1.5)
    return x, x.mm(W_TARGET) + B_TARGET


fc = nn.Linear(POLY_DEGREE, 1)
optimizer = torch.optim.Adam(fc.parameters(), lr=0.05)
for step in range(400):
    batch_x, batch_y = get_batch()
    loss = nn.functional.smooth_l1_loss(fc(batch_x), batch_y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4g}")
print(f"final loss {loss.item():.4g}")
