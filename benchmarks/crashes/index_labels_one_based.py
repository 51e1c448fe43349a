# expect: index-out-of-range fix-label-range
import torch
from torch import nn

model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5))
opt = torch.optim.Adam(model.parameters())
for _step in range(3):
    x = torch.randn(10, 6)
    y = torch.randint(1, 6, (10,))  # cause
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
