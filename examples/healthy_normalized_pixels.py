"""Healthy: 0-255 pixels scaled to [0, 1] and standardised, hidden layers kept in nn.ModuleList.

No root cause: this script must produce no event and no fix.
"""

import torch
from torch import nn


class PixelNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(64, 32)
        self.hidden = nn.ModuleList([nn.Linear(32, 32) for _ in range(2)])
        self.out = nn.Linear(32, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.tanh(self.inp(x))
        for layer in self.hidden:
            x = torch.tanh(layer(x))
        return self.out(x)


torch.manual_seed(26)
pixels = torch.randint(0, 256, (1200, 64)).float()
labels = (pixels[:, :32].mean(dim=1) > pixels[:, 32:].mean(dim=1)).long()
scaled = pixels / 255.0
inputs = (scaled - scaled.mean()) / scaled.std()
model = PixelNet()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(4):
    for i in range(0, 1200, 32):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[i : i + 32]), labels[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
