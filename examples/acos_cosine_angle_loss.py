"""Root cause: an angular loss takes torch.acos of a cosine similarity that reaches 1 (two equal
embeddings); acos's derivative -1/sqrt(1 - x^2) is infinite at 1, and a cosine that rounds to
1.0000001 is nan already in forward.

A siamese embedding net is trained to pull two views of a sample together by the angle between
them. At step 3 both views are the same input, their cosine similarity is 1 (and a rounding
step above it), and the loss is nan. Clamping the cosine into (-1, 1) with an eps fixes it.
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05)

for step in range(10):
    view_a = torch.randn(16, 8)
    view_b = view_a if step == 3 else view_a + 0.3 * torch.randn(16, 8)
    cos = F.cosine_similarity(encoder(view_a), encoder(view_b), dim=-1)
    angle = torch.acos(cos)
    loss = angle.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
