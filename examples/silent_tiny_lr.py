"""Root cause: the learning rate is 1e-9, millions of times below Adam's usual 1e-3: the weights never move.

Set through a flag whose default was mistyped.
"""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-9)
parser.add_argument("--steps", type=int, default=160)
args = parser.parse_args()

torch.manual_seed(8)
x = torch.randn(512, 8)
y = (x[:, 0] - x[:, 2] > 0).long()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
for _step in range(args.steps):
    idx = torch.randint(0, 512, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
print("final", loss.item())
