# expect: shape-mismatch fix-layer-size
import torch
from torch import nn

HIDDEN = 256


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(30, 128)
        self.dec = nn.Linear(HIDDEN, 30)  # cause

    def forward(self, x):
        return self.dec(torch.tanh(self.enc(x)))


ae = Net()
opt = torch.optim.Adam(ae.parameters())
x = torch.randn(16, 30)
loss = nn.functional.mse_loss(ae(x), x)
opt.zero_grad()
loss.backward()
opt.step()
