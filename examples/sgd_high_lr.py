"""Root cause: the learning rate (--lr, default 2.0) is far too high for plain SGD on this model.

A small regression network trained with SGD; each update overshoots the minimum by more than it
corrects, so the loss and the weights grow geometrically step over step until the loss
overflows to inf and the gradients become nan. A learning rate around 1e-2 trains fine.
"""

import argparse

import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(d_hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()

    torch.manual_seed(1)
    x = torch.randn(512, 20)
    y = x @ torch.randn(20, 1) * 3.0 + 1.0

    model = Regressor(20, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    for step in range(args.steps):
        idx = torch.randint(0, 512, (64,))
        optimizer.zero_grad()
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4g}")


if __name__ == "__main__":
    main()
