# expect: shape-mismatch fix-layer-size
import torch
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(20, 64)
        self.l2 = nn.Linear(32, 10)  # cause

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


model = MLP()
opt = torch.optim.Adam(model.parameters())
x, y = torch.randn(8, 20), torch.randint(0, 10, (8,))
loss = nn.CrossEntropyLoss()(model(x), y)
loss.backward()
opt.step()
