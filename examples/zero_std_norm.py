"""Root cause: a hand-written layer norm divides by a standard deviation that is exactly 0.

``PlainLayerNorm`` normalises each sample over its features as ``(x - mean) / std`` with no
epsilon. The batches are padded: short sequences are filled with all-zero rows, whose std is 0,
so the division gives 0/0 = nan as soon as a batch holds a padded row. Adding an eps to the
denominator (as ``nn.LayerNorm`` does) removes it.
"""

import torch
from torch import nn


class PlainLayerNorm(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu = x.mean(dim=-1, keepdim=True)
        sigma = x.std(dim=-1, keepdim=True)
        z = (x - mu) / sigma
        return self.gamma * z + self.beta


class Tagger(nn.Module):
    """Per-token classifier over padded sequences of 8-dimensional token features."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 32, bias=False)
        self.norm = PlainLayerNorm(32)
        self.head = nn.Linear(32, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.norm(self.proj(tokens))))


def padded_batch(generator: torch.Generator, pad: bool) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = torch.randn(6, 10, 8, generator=generator)
    labels = torch.randint(0, 4, (6, 10), generator=generator)
    if pad:
        tokens[2, 7:] = 0.0  # a short sequence, padded with zeros
    return tokens, labels


torch.manual_seed(3)
model = Tagger()
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
gen = torch.Generator().manual_seed(11)
for step in range(20):
    tokens, labels = padded_batch(gen, pad=step >= 5)
    optimizer.zero_grad()
    logits = model(tokens)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 4), labels.reshape(-1))
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
