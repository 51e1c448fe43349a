"""A small CNN with BatchNorm on synthetic images, SGD with momentum, cross-entropy."""

import torch
import torch.nn.functional as F
from torch import nn


class ConvNet(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, classes)

    def forward(self, images):
        h = F.relu(self.bn1(self.conv1(images)))
        h = F.max_pool2d(h, 2)
        h = F.relu(self.bn2(self.conv2(h)))
        h = h.mean(dim=(2, 3))
        logits = self.fc(h)
        return logits


def main() -> None:
    torch.manual_seed(1)
    images = torch.randn(256, 1, 8, 8)
    labels = (images[:, 0, :4].mean(dim=(1, 2)) > images[:, 0, 4:].mean(dim=(1, 2))).long()
    model = ConvNet(2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for step in range(40):
        batch = torch.randint(0, 256, (32,))
        optimizer.zero_grad()
        logits = model(images[batch])
        loss = F.cross_entropy(logits, labels[batch])
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
