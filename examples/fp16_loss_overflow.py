"""Root cause: the loss is summed in float16 and overflows, although the model's outputs are fine.

The model runs in float16 (``.half()``) and its outputs are small, but the loss is a hand-written
sum of squared errors over the whole batch and all 512 outputs: the sum of 64 x 512 terms passes
fp16's largest value (65504) and the loss is inf. Computing the loss in float32
(``pred.float()``, ``target.float()``) or taking the mean keeps it finite.
"""

import torch
from torch import nn

torch.manual_seed(10)

decoder = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 512)).half()
optimizer = torch.optim.SGD(decoder.parameters(), lr=1e-5)

codes = torch.randn(64, 32, dtype=torch.float16)
images = torch.rand(64, 512, dtype=torch.float16) * 4.0

for step in range(20):
    optimizer.zero_grad()
    pred = decoder(codes)
    loss = ((pred - images) ** 2).sum()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
