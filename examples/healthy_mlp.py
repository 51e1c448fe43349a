"""Healthy: a small MLP regression trained with Adam in float32; the loss falls steadily.

No root cause: this script must produce no event and no fix.
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()

    torch.manual_seed(20)
    x = torch.randn(512, 8)
    y = torch.sin(x[:, :1]) + 0.5 * x[:, 1:2]
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        idx = torch.randint(0, 512, (64,))
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        print(f"step {step} loss {loss.item():.4g}")


if __name__ == "__main__":
    main()
