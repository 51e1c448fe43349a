"""Reads a file beside itself through __file__ after a chdir; inspect.getsource and
torch.jit.script of its own function."""

import inspect
import os

import torch


def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


os.makedirs("elsewhere", exist_ok=True)
os.chdir("elsewhere")
with open(os.path.join(os.path.dirname(__file__), "beside.txt")) as f:
    print("result file", f.read().strip())
print("result source", inspect.getsource(scale).splitlines()[0])
print("result jit", torch.jit.script(scale)(torch.ones(2)).tolist())
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    model(torch.ones(1, 2)).pow(2).mean().backward()
    opt.step()
