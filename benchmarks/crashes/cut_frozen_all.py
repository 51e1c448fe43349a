# expect: graph-cut-before-backward restore-gradient-flow
import torch
from torch import nn

model = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 2))
for p in model.parameters():
    p.requires_grad = False
opt = torch.optim.SGD(model.parameters(), lr=0.1)
logits = model(torch.randn(3, 6))  # cause
loss = nn.functional.cross_entropy(logits, torch.tensor([0, 1, 1]))
loss.backward()
opt.step()
