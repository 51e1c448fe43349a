"""Root cause: the loss is computed in float16; the squared errors of an `nn.MSELoss` module
pass 65504, float16's largest value, inside the loss module.

A float16 regression whose errors of a few hundred square to inf in MSELoss; the event is
located at the user's `criterion(pred, target)` line, the torch line inside it kept beside.
Fix: compute the loss in float32 (`criterion(pred.float(), target.float())`).
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 1).half()
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(64, 8).half()
target = (torch.randn(64, 1) * 40).half()
for step in range(30):
    optimizer.zero_grad()
    pred = model(x)
    loss = criterion(pred, target * (1 + step))
    loss.backward()
    optimizer.step()
print("final loss", loss.item())
