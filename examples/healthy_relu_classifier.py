"""Root cause: none. A plain ReLU classifier: about half its ReLU outputs are 0, as they should be, and it learns.

The look-alike of a net whose ReLUs die.
"""

import torch
from torch import nn

torch.manual_seed(24)
x = torch.randn(2000, 20)
y = (x[:, :5].sum(dim=1) > 0).long() + (x[:, 5] > 0.5).long()
model = nn.Sequential(
    nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 3)
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(120):
    idx = torch.randint(0, 2000, (64,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    if step % 40 == 0:
        print(f"step {step} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}")
