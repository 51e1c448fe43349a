"""Root cause: the --lr flag's default is 5e9, twelve orders of magnitude above Adam's usual 1e-3.

A typo in the exponent (5e9 for 5e-4): the first Adam update moves every weight by about the lr
itself, the next forward pass overflows, and the loss is inf within a couple of steps. Dividing
by ten would leave an lr of 5e8, just as hopeless; the fix is an lr near Adam's usual 1e-3.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=5e9)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(0)
    x = torch.randn(256, 16)
    y = (x[:, :4].sum(1) > 0).long()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        idx = torch.randint(0, 256, (32,))
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x[idx]).exp(), y[idx])
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4g}")


if __name__ == "__main__":
    main()
