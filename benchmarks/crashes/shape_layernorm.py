# expect: shape-mismatch fix-layer-size
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d=48):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.norm = nn.LayerNorm(64)  # cause

    def forward(self, x):
        return self.norm(self.proj(x))


block = Block()
opt = torch.optim.AdamW(block.parameters())
for _step in range(2):
    loss = block(torch.randn(2, 5, 48)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
