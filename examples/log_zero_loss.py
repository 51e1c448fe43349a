"""Root cause: a hand-written binary cross-entropy takes log(1 - p) where p is exactly 1.

The loss is written as ``-(t * log(p) + (1 - t) * log(1 - p))`` on top of ``sigmoid``. Once a
logit passes ~17, ``sigmoid`` rounds to exactly 1.0 in float32, ``1 - p`` is 0 and ``log(0)``
is -inf: the loss becomes inf. ``F.binary_cross_entropy_with_logits`` computes the same loss
from the logits without ever forming log(0).
"""

import torch
from torch import nn

torch.manual_seed(2)

x = torch.randn(400, 8)
labels = (x[:, 0] > 0).float()
# A few mislabelled samples: the model grows confident and is then "surely wrong" on them.
labels[:12] = 1.0 - labels[:12]

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)


def bce(p: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return -(t * torch.log(p) + (1 - t) * torch.log(1 - p)).mean()


for step in range(60):
    optimizer.zero_grad()
    p = torch.sigmoid(model(x).squeeze(1) * 4.0)
    loss = bce(p, labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
