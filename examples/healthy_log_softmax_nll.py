"""Healthy: a model ending in nn.LogSoftmax trained with nn.NLLLoss, the pair that expects log-probabilities.

No root cause: this script must produce no event and no fix.
"""

import torch
from torch import nn

torch.manual_seed(25)
x = torch.randn(1000, 12)
y = x[:, :3].argmax(dim=1)
model = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 3), nn.LogSoftmax(dim=1))
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    for i in range(0, 1000, 50):
        optimizer.zero_grad()
        loss = criterion(model(x[i : i + 50]), y[i : i + 50])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
