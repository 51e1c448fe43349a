"""A regression with a hand-written squared error and no nn loss: the model returns (N, 1),
the targets are (N,), and ``pred - y`` broadcasts to an (N, N) matrix that compares every
prediction with every target: the model can only learn the targets' mean."""

import torch
from torch import nn

CFG = {"lr": 0.01, "epochs": 30, "batch": 64}


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


def squared_error(pred, target):
    return ((pred - target) ** 2).mean()


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(640, 5)
    y = x @ torch.tensor([1.5, -2.0, 0.5, 1.0, -1.0])  # shape (N,)
    model = Regressor()
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    for epoch in range(CFG["epochs"]):
        for xb, yb in zip(x.split(CFG["batch"]), y.split(CFG["batch"]), strict=True):
            optimizer.zero_grad()
            loss = squared_error(model(xb), yb)
            loss.backward()
            optimizer.step()
        if epoch % 10 == 0 or epoch == CFG["epochs"] - 1:
            print(f"epoch {epoch} loss {loss.item():.4f}")
