"""CUDA autocast fp16: the input grows each step until fc2's fp16 output is inf."""

import torch
from torch import nn

torch.manual_seed(0)
device = "cuda"


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


model = Net().to(device)
with torch.no_grad():
    model.fc2.weight.mul_(200.0)
opt = torch.optim.SGD(model.parameters(), lr=1e-9)
scaler = torch.amp.GradScaler(device)
x = torch.randn(8, 16, device=device)
for step in range(6):
    with torch.autocast(device, dtype=torch.float16):
        out = model(x * 4.0**step)
        loss = out.float().mean() * 1e-3
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
print("done")
