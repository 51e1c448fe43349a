# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.gate = nn.Sigmoid()
        self.act = nn.ReLU(inplace=True)  # cause
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out(self.act(self.gate(self.fc(x))))


head = Head()
opt = torch.optim.SGD(head.parameters(), lr=0.1)
loss = head(torch.randn(4, 8)).mean()
opt.zero_grad()
loss.backward()
opt.step()
