"""A residual MLP (blocks in a ModuleList) fed by a DataLoader, AdamW, a loss module."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, h):
        return h + self.fc(torch.relu(self.norm(h)))


class ResNet(nn.Module):
    def __init__(self, features: int, width: int, depth: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Linear(features, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.stem(x)
        for block in self.blocks:
            h = block(h)
        logits = self.head(h)
        return logits


def main() -> None:
    torch.manual_seed(2)
    features = torch.randn(640, 10)
    targets = (features[:, 0] + features[:, 1] * features[:, 2] > 0).long() + (
        features[:, 3] > 1
    ).long()
    loader = DataLoader(TensorDataset(features, targets), batch_size=32, shuffle=True)
    model = ResNet(10, 32, 3, 3)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    for epoch in range(2):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            logits = model(xb)
            loss = criterion(logits, yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
