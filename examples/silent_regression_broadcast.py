"""Root cause: the model outputs (N, 1) and the target is (N,), so mse_loss broadcasts them to (N, N).

Every prediction is compared with every target; the best the model can do is predict the mean.
"""

import torch
from torch import nn


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


torch.manual_seed(9)
features = torch.randn(640, 4)
prices = features @ torch.tensor([3.0, -1.0, 0.5, 2.0]) + 0.1 * torch.randn(640)
model = Regressor()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for _epoch in range(2):
    for i in range(0, 640, 32):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(features[i : i + 32]), prices[i : i + 32])
        loss.backward()
        optimizer.step()
print("final", loss.item())
