"""A complex parameter under Adam, and a complex activation in a model."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
w = torch.nn.Parameter(torch.randn(4, dtype=torch.cfloat))
layer = torch.nn.Linear(4, 4).to(torch.cfloat)
opt = torch.optim.Adam([w, *layer.parameters()], lr=0.01)
for _ in range(5):
    opt.zero_grad()
    loss = (layer(w).abs() ** 2).sum()
    loss.backward()
    opt.step()
print("result complex", repr(loss.item()), repr(w.sum().item()))
