"""Root cause: the gradient of sqrt at 0 is infinite; a zero vector's norm makes the backward nan.

The embeddings are L2-normalised by hand with ``(e ** 2).sum(-1).sqrt()``. The padding row of the
embedding table is all zeros, so the norm of their vectors is sqrt(0): the forward value is a
finite 0 (guarded by a clamp), but the backward of sqrt at 0 is 1 / (2 * 0) = inf, multiplied by
the zero gradient of ``e ** 2`` gives nan in the embedding gradient. ``sqrt(x + eps)`` (or
``torch.linalg.vector_norm``/``F.normalize``) avoids it.
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(5)

vocab, dim = 50, 16
embedding = nn.Embedding(vocab, dim)
with torch.no_grad():
    embedding.weight[0].zero_()  # token 0 is padding: its vector starts at zero
head = nn.Linear(dim, 4)
params = list(embedding.parameters()) + list(head.parameters())
optimizer = torch.optim.SGD(params, lr=0.1, momentum=0.9)

tokens = torch.randint(1, vocab, (64, 12))
tokens[:, 9:] = 0  # padding at the end of every sequence
labels = torch.randint(0, 4, (64,))

for step in range(20):
    optimizer.zero_grad()
    e = embedding(tokens)
    norm = (e**2).sum(-1, keepdim=True).sqrt()
    e = e / norm.clamp_min(1e-6)
    logits = head(e.mean(dim=1))
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
