"""A curve fit with L-BFGS: the loss is computed in a closure the optimizer calls."""

import torch
from torch import nn


def main() -> None:
    torch.manual_seed(10)
    t = torch.linspace(-3, 3, 200)[:, None]
    target = torch.sin(t) + 0.1 * torch.randn(200, 1)
    model = nn.Sequential(nn.Linear(1, 24), nn.Tanh(), nn.Linear(24, 1))
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)

    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(t), target)
        loss.backward()
        return loss

    for step in range(25):
        loss = optimizer.step(closure)
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
