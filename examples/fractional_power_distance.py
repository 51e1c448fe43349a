"""Root cause: a contrastive loss takes the distance as ``dist ** 0.5``; a pair of identical
embeddings has dist = 0, where the derivative 0.5 * dist ** -0.5 is infinite, so the gradient is
nan from a finite forward.

At step 2 a batch pairs each sample with itself (a duplicated batch from the sampler). The
forward is a finite 0, the backward of the power is inf * 0 = nan. ``dist.clamp(min=eps) ** 0.5``
keeps the derivative finite.
"""

import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Linear(8, 4)
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05)

for step in range(10):
    anchor = torch.randn(16, 8)
    positive = anchor if step == 2 else anchor + 0.1 * torch.randn(16, 8)
    dist = ((encoder(anchor) - encoder(positive)) ** 2).sum(-1)
    loss = (dist**0.5).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
