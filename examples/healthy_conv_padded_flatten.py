"""A healthy look-alike of crash_conv_flatten_size.py: the 3x3 convolution is padded, so each
28x28 image stays 28x28 and the head's 8 * 28 * 28 features are what it gets.
"""

import torch
from torch import nn

torch.manual_seed(0)


class SmallConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.fc = nn.Linear(8 * 28 * 28, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        x = torch.flatten(x, 1)
        return self.fc(x)


images = torch.randn(64, 1, 28, 28)
labels = (images[:, 0, :14].mean(dim=(1, 2)) > 0).long() * 3
model = SmallConvNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(12):
    batch = slice(16 * (step % 4), 16 * (step % 4) + 16)
    loss = nn.functional.cross_entropy(model(images[batch]), labels[batch])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
