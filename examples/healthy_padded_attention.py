"""Healthy: attention with a float("-inf") padding mask where every sequence keeps at least one
real token, so no row of scores is masked everywhere and softmax stays finite."""

import torch
from torch import nn

torch.manual_seed(0)


class PaddedAttention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        scores = scores.masked_fill(pad[:, None, :], float("-inf"))
        return self.out(scores.softmax(dim=-1) @ v)


embed = nn.Embedding(50, 16)
attention = PaddedAttention(16)
head = nn.Linear(16, 2)
params = [*embed.parameters(), *attention.parameters(), *head.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)

for step in range(10):
    lengths = torch.randint(1, 10, (6,))  # at least one real token each
    pad = torch.arange(10)[None, :] >= lengths[:, None]
    tokens = torch.randint(1, 50, (6, 10))
    hidden = attention(embed(tokens), pad)
    keep = (~pad).float()[..., None]
    pooled = (hidden * keep).sum(1) / keep.sum(1).clamp_min(1.0)
    loss = nn.functional.cross_entropy(head(pooled), torch.randint(0, 2, (6,)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
