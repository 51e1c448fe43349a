# expect: shape-mismatch fix-layer-size
import torch
from torch import nn

signal_model = nn.Sequential(
    nn.Conv1d(2, 8, kernel_size=5),
    nn.ReLU(),
    nn.Flatten(),
    nn.Linear(8 * 100, 1),  # cause
)
optimizer = torch.optim.Adam(signal_model.parameters(), lr=1e-3)
waves = torch.randn(6, 2, 100)
loss = signal_model(waves).pow(2).mean()
optimizer.zero_grad()
loss.backward()
optimizer.step()
