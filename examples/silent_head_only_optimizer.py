"""Root cause: the optimizer is built from the classifier head only; the encoder gets gradients but never changes.

The encoder was meant to be fine-tuned (it keeps requires_grad=True), but only
`model.head.parameters()` went into the optimizer.
"""

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        self.head = nn.Linear(64, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def train() -> None:
    torch.manual_seed(3)
    x = torch.randn(800, 20)
    y = x[:, :5].argmax(dim=1)
    model = Classifier()
    optimizer = torch.optim.AdamW(model.head.parameters(), lr=1e-3)
    for _step in range(50):
        idx = torch.randint(0, 800, (64,))
        logits = model(x[idx])
        loss = nn.functional.cross_entropy(logits, y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    train()
