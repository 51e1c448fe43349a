"""The loss is computed in fp16: squaring outputs of a few hundred overflows 65504."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(16, 8)
y = torch.randn(16, 4)
for step in range(5):
    out = model(x * 100.0 * (step + 1))
    diff = (out - y).half()
    loss = (diff * diff).sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
