# expect: dtype-mismatch cast-dtype
import torch
from torch import nn

layer = nn.Linear(8, 2)
opt = torch.optim.SGD(layer.parameters(), lr=0.1)
batch = torch.randn(4, 8).to(torch.float16)
for _ in range(2):
    loss = layer(batch).float().pow(2).mean()  # cause
    opt.zero_grad()
    loss.backward()
    opt.step()
