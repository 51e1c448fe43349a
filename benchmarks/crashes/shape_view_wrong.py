# expect: shape-mismatch fix-layer-size
import torch
import torch.nn.functional as F
from torch import nn


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, 16 * 5 * 5)  # cause
        return self.fc2(F.relu(self.fc1(x)))


net = LeNet()
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
images = torch.randn(4, 1, 28, 28)
loss = F.cross_entropy(net(images), torch.randint(0, 10, (4,)))
loss.backward()
opt.step()
