"""Root cause: a float16 self-attention builds its padding bias with -1e9, a number float16
cannot hold (its largest finite value is 65504), so the bias is -inf.

Rows with some real tokens still softmax fine (exp(-inf) = 0), so the run trains for a few
steps; the first batch holding a fully padded sequence gives a row that is -inf everywhere, and
its softmax is nan. ``torch.finfo(dtype).min`` is the lowest value the dtype can hold.
"""

import torch
from torch import nn

torch.manual_seed(0)


class SelfAttention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
        bias = (1.0 - mask[:, None, :].to(scores.dtype)) * -1e9  # padding gets "minus infinity"
        return self.out((scores + bias).softmax(-1) @ v)


model = nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 32)).half()
attention = SelfAttention(32).half()
head = nn.Linear(32, 2).half()
params = [*model.parameters(), *attention.parameters(), *head.parameters()]
opt = torch.optim.SGD(params, lr=0.01)

for step in range(20):
    tokens = torch.randint(0, 100, (8, 12))
    mask = torch.ones(8, 12)
    mask[:, 9:] = 0  # padding at the end of each sequence
    if step == 3:
        mask[5] = 0  # a batch with an empty sequence
    labels = torch.randint(0, 2, (8,))
    logits = head(attention(model(tokens), mask).mean(1)).float()
    loss = nn.functional.cross_entropy(logits, labels)
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"step {step} loss {loss.item():.4f}")
