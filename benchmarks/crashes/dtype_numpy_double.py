# expect: dtype-mismatch cast-dtype
import numpy as np
import torch
from torch import nn

model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
opt = torch.optim.Adam(model.parameters())
features = torch.from_numpy(np.random.rand(5, 3))
targets = torch.zeros(5, 1)
for _epoch in range(2):
    out = model(features)  # cause
    loss = nn.functional.mse_loss(out, targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
