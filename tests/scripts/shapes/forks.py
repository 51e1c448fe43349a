"""A pool of forked workers, each training a small model, and a bare os.fork() child that
runs on to the script's end."""

import multiprocessing as mp
import os

import torch
from torch import nn


def work(i):
    torch.manual_seed(i)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        opt.step()
    return repr(loss.item())


torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    opt.step()
with mp.get_context("fork").Pool(2) as pool:
    print("result pool", *pool.map(work, range(4)), flush=True)
pid = os.fork()
if pid == 0:
    print("result child", repr(loss.item()), flush=True)
else:
    _, status = os.waitpid(pid, 0)
    print("result parent", repr(loss.item()), os.waitstatus_to_exitcode(status), flush=True)
