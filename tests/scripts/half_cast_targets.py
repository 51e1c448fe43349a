"""Regression targets in raw units (finite, up to ~1e5) are cast to float16 beside the
outputs of a .half() model: past 65504 they become inf in the cast, and so does the loss."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(40, 6)
targets = 3.0e4 + 5.0e3 * torch.randn(40, 1)
targets[21] = 9.0e4  # finite in float32, beyond float16's 65504: the third batch
loader = DataLoader(TensorDataset(features, targets), batch_size=8, shuffle=False)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)).half()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
for xb, yb in loader:
    out = model(xb.half())
    loss = nn.functional.l1_loss(out, yb.half())
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
