"""A nan in the batch of a training loop run in a thread of its own; the main thread goes on
after it."""

import threading

import torch
from torch import nn

torch.manual_seed(0)
m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


def train():
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for step in range(20):
        opt.zero_grad()
        x = torch.randn(8, 4)
        if step == 5:
            x[0, 0] = float("nan")
        m(x).pow(2).mean().backward()
        opt.step()


t = threading.Thread(target=train)
t.start()
t.join()
print("main goes on")
