"""A regression MLP under CPU float16 autocast with a GradScaler scaling its loss."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 1)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        out = self.fc2(h)
        return out


def main() -> None:
    torch.manual_seed(15)
    x = torch.randn(512, 8)
    y = x[:, :2].sum(dim=1, keepdim=True) * 0.5
    model = Model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler("cpu")
    for step in range(50):
        b = torch.randint(0, 512, (64,))
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            pred = model(x[b])
            loss = nn.functional.mse_loss(pred.float(), y[b])
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
