"""Root cause: a custom weight initialisation scales the weights to ~1e30.

``init_weights`` means to draw weights with std ``1 / sqrt(fan_in)`` but multiplies by a "gain"
of 1e30 instead (a typo for 1.0 after a unit change). The weights are finite but huge before the
first step: the first Linear's outputs are ~1e31 and the next layer's product passes float32's
largest value (3.4e38), so the very first forward pass gives inf. The fix is the initialisation,
not the optimizer.
"""

import math

import torch
from torch import nn

GAIN = 1e30


def init_weights(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=GAIN / math.sqrt(module.in_features))
        nn.init.zeros_(module.bias)


def build_model() -> nn.Module:
    model = nn.Sequential(
        nn.Linear(16, 64),
        nn.LeakyReLU(),
        nn.Linear(64, 64),
        nn.LeakyReLU(),
        nn.Linear(64, 2),
    )
    model.apply(init_weights)
    return model


def train() -> None:
    torch.manual_seed(9)
    model = build_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(200, 16)
    y = (x.sum(dim=1) > 0).long()
    for step in range(10):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4g}")


if __name__ == "__main__":
    train()
