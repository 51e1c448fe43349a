"""Two threads, each training its own model (built in the main thread, so both runs start
from the same weights under python and under diagnose)."""

import hashlib
import threading

import torch
from torch import nn

torch.set_num_threads(1)
torch.manual_seed(0)
models = [nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)) for _ in range(2)]
results = {}


def train(i):
    g = torch.Generator().manual_seed(i)
    model = models[i]
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(32, 8, generator=g)
    y = x.sum(1, keepdim=True)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    weights = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
    results[i] = (repr(losses[-1]), hashlib.sha256(weights).hexdigest())


threads = [threading.Thread(target=train, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for i in sorted(results):
    print("result", i, *results[i])
