"""A binary classifier over a DataLoader, SGD, and an epoch-wise StepLR schedule."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(6, 24)
        self.drop = nn.Dropout(0.1)
        self.score = nn.Linear(24, 1)

    def forward(self, x):
        h = self.drop(torch.relu(self.hidden(x)))
        logit = self.score(h)
        return logit


def main() -> None:
    torch.manual_seed(17)
    x = torch.randn(512, 6)
    y = ((x[:, 0] * x[:, 1] + x[:, 2]) > 0).float()[:, None]
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = Scorer()
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    for epoch in range(6):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            logit = model(xb)
            loss = loss_fn(logit, yb)
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
