"""An MLP regressing a smooth function of its inputs, Adam, an explicit loop."""

import torch
import torch.nn.functional as F
from torch import nn


class Regressor(nn.Module):
    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        out = self.head(h)
        return out


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(512, 8)
    y = torch.sin(x[:, :1]) + 0.5 * x[:, 1:2]
    model = Regressor(8, 32)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for step in range(60):
        idx = torch.randint(0, 512, (64,))
        optimizer.zero_grad()
        pred = model(x[idx])
        loss = F.mse_loss(pred, y[idx])
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
