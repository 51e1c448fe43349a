# expect: shape-mismatch fix-layer-size
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3, padding=1)
        self.c2 = nn.Conv2d(16, 64, 3, padding=1)  # cause
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 2)

    def forward(self, x):
        x = self.c2(torch.relu(self.c1(x)))
        return self.fc(self.pool(x).flatten(1))


enc = Encoder()
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
for _step in range(3):
    out = enc(torch.randn(2, 1, 16, 16))
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
