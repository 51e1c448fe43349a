"""Healthy: attention with a causal mask filled with -inf before softmax; must stay clean.

The -inf entries are deliberate: ``masked_fill(mask, -inf)`` hides future positions and softmax
turns them into exact zeros. No non-finite value ever reaches a module's output, the loss, a
gradient or a weight, so this script must produce no event and no fix.
"""

import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        return self.proj(torch.softmax(scores, dim=-1) @ v)


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(self.ln(x))


torch.manual_seed(21)
model = nn.Sequential(nn.Embedding(40, 32), Block(32), Block(32), nn.Linear(32, 40))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
tokens = torch.randint(0, 40, (16, 12))
for step in range(30):
    optimizer.zero_grad()
    logits = model(tokens[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, 40), tokens[:, 1:].reshape(-1))
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
