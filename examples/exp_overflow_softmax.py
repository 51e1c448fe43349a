"""Root cause: a hand-written softmax calls exp() on large logits, which overflows to inf.

``softmax(z) = exp(z) / exp(z).sum()`` without subtracting the row maximum first. The attention
scores are not scaled by 1/sqrt(d), so they reach ~100 and exp(100) is inf in float32 (the limit
is ~88.7): inf / inf = nan. ``torch.softmax`` (or ``z - z.max(-1, keepdim=True).values``) is
stable.
"""

import torch
from torch import nn

torch.manual_seed(6)


def softmax(z: torch.Tensor) -> torch.Tensor:
    e = torch.exp(z)
    return e / e.sum(dim=-1, keepdim=True)


class Attention(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1)  # missing the 1/sqrt(d) scale
        return self.out(softmax(scores) @ v)


model = nn.Sequential(Attention(64), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(8, 10, 64) * 3.0
y = torch.randn(8, 10, 1)
for step in range(30):
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
