"""On CUDA, one sample of the dataset holds a NaN: it reaches the model in the second batch."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cuda"
features = torch.randn(40, 6)
features[13, 2] = float("nan")
targets = torch.randn(40, 1)
loader = DataLoader(TensorDataset(features, targets), batch_size=8, shuffle=False)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for xb, yb in loader:
    xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
