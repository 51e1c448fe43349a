"""Healthy: gradients accumulated over 4 micro-batches, one optimizer step and one zero_grad per window.

No root cause: this script must produce no event and no fix.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ACCUMULATE = 4
torch.manual_seed(22)
x = torch.randn(1024, 16)
y = (x[:, :4].sum(dim=1) > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(3):
    for i, (xb, yb) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(xb), yb) / ACCUMULATE
        loss.backward()
        if (i + 1) % ACCUMULATE == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    print(epoch, loss.item() * ACCUMULATE)
