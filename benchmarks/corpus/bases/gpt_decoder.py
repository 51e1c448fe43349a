"""A tiny GPT-style decoder (hand-written causal attention), AdamW, warmup then cosine."""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 16
CONTEXT = 12


class Attention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, h):
        b, t, c = h.shape
        q, k, v = self.qkv(h).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(out)


class GPT(nn.Module):
    def __init__(self, vocab: int, width: int, layers: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(CONTEXT, width)
        self.attn = nn.ModuleList([Attention(width, 4) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab)

    def forward(self, idx):
        h = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.attn:
            h = h + block(h)
        logits = self.lm_head(self.norm(h))
        return logits


def lr_at(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def main() -> None:
    torch.manual_seed(6)
    total = 50
    start = torch.randint(0, VOCAB, (256, 1))
    data = (start + torch.arange(CONTEXT + 1)[None, :]) % VOCAB
    model = GPT(VOCAB, 32, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_at(s, 5, total))
    for step in range(total):
        b = torch.randint(0, 256, (32,))
        x, y = data[b, :-1], data[b, 1:]
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
