"""An MLP classifier whose forward runs under CPU bfloat16 autocast, Adam."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        out = self.fc3(h)
        return out


def main() -> None:
    torch.manual_seed(14)
    x = torch.randn(768, 16)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(50):
        b = torch.randint(0, 768, (64,))
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(x[b])
            loss = nn.functional.cross_entropy(out.float(), y[b])
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
