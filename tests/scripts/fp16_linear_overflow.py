"""fp16 activations overflow in a Linear: the input grows each step until fc2's output is inf."""

import torch
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


model = Net().half()
with torch.no_grad():
    model.fc2.weight.mul_(200.0)
opt = torch.optim.SGD(model.parameters(), lr=1e-9)
x = torch.randn(8, 16).half()
for step in range(6):
    out = model(x * 4.0**step)
    loss = out.float().mean() * 1e-3
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
