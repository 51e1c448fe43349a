# expect: shape-mismatch fix-layer-size
import torch
from torch import nn


class Down(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, kernel_size=3, stride=2, padding=1)
        self.head = nn.Linear(4 * 32 * 32, 5)  # cause

    def forward(self, img):
        feats = torch.relu(self.conv(img))
        return self.head(feats.flatten(start_dim=1))


def train(model, steps=2):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        loss = model(torch.randn(3, 3, 32, 32)).logsumexp(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


train(Down())
