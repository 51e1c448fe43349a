"""Finite float32 readings up to ~1e5 are cast to float16 for a .half() model: past 65504 they
become inf in the cast, in the second batch."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(40, 6) * 100.0
features[13, 2] = 1.0e5  # finite in float32, beyond float16's 65504
targets = torch.randn(40, 1)
loader = DataLoader(TensorDataset(features, targets), batch_size=8, shuffle=False)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)).half()
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
for xb, yb in loader:
    loss = nn.functional.mse_loss(model(xb.half()).float(), yb)
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
