"""Root cause: the backbone's features are detached before the head, so the backbone never learns.

A `.detach()` left over from a feature-extraction experiment cuts the graph: the optimizer
holds the backbone's parameters but backward never reaches them.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU()
        )
        self.head = nn.Linear(16, 4)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.backbone(images).mean(dim=(2, 3)).detach()
        return self.head(features)


torch.manual_seed(4)
images = torch.randn(256, 1, 12, 12)
labels = (images[:, 0, :6, :6].mean(dim=(1, 2)) * 4).clamp(-1.99, 1.99).add(2).long()
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=2e-3)
for _epoch in range(3):
    for i in range(0, 256, 32):
        opt.zero_grad()
        loss = F.cross_entropy(net(images[i : i + 32]), labels[i : i + 32])
        loss.backward()
        opt.step()
print("done", loss.item())
