"""A 3-layer ReLU MLP whose only sigmoid is its output, fitted with MSE to prices in the
hundreds: a sigmoid never leaves (0, 1), so no weight can bring the output to its targets."""

import torch
from torch import nn


class PriceModel(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)
        )
        self.squash = nn.Sigmoid()

    def forward(self, x):
        return self.squash(self.body(x))


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(512, 8)
    prices = 250 + 40 * x[:, :1] + 10 * torch.randn(512, 1)
    model = PriceModel(8)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(10):
        for xb, yb in zip(x.split(32), prices.split(32), strict=True):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.1f}")
