"""An MLP classifier stepped once every four micro-batches (gradient accumulation)."""

import torch
from torch import nn

ACCUMULATE = 4


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(12, 48), nn.GELU(), nn.Linear(48, 4))

    def forward(self, x):
        logits = self.layers(x)
        return logits


def main() -> None:
    torch.manual_seed(13)
    x = torch.randn(1024, 12)
    y = x[:, :4].argmax(dim=1)
    model = Classifier()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    optimizer.zero_grad()
    for micro in range(120):
        b = torch.randint(0, 1024, (16,))
        logits = model(x[b])
        loss = criterion(logits, y[b]) / ACCUMULATE
        loss.backward()
        if (micro + 1) % ACCUMULATE == 0:
            optimizer.step()
            optimizer.zero_grad()
            print(f"step {micro // ACCUMULATE} loss {loss.item() * ACCUMULATE:.4f}")


if __name__ == "__main__":
    main()
