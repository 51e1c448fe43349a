"""Root cause: an epoch-based StepLR (step_size=2, gamma=0.1) is stepped after every batch, so the lr is ~0 after a few dozen batches.

The schedule was written for epochs; stepped per batch it divides the lr by 10 every two
batches.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(7)
data = torch.randn(2048, 6)
target = (data[:, 0] * data[:, 1] > 0).long()
loader = DataLoader(TensorDataset(data, target), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
for epoch in range(6):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        scheduler.step()
    print(epoch, scheduler.get_last_lr()[0], loss.item())
