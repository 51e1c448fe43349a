"""Healthy: a small regression that ends with `sys.exit(status)`, as a script reporting its
own result to a shell does (3 by default, `--status 0` for success).

No root cause: this script must produce no event and no fix; diagnose reports a clean run
that exited with that status, and exits with it too, as the script alone would.
"""

import argparse
import sys

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--status", type=int, default=3)
args = parser.parse_args()

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(256, 4)
y = x @ torch.tensor([[1.0], [-1.0], [0.5], [2.0]])
for _step in range(60):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
print("final", loss.item())
sys.exit(args.status)
