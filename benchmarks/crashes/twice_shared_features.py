# expect: backward-through-graph-twice detach-carried-state
import torch
from torch import nn

backbone = nn.Linear(8, 8)
head = nn.Linear(8, 2)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
data = torch.randn(10, 8)
feats = torch.relu(backbone(data))  # cause
for _epoch in range(3):
    loss = nn.functional.cross_entropy(head(feats), torch.zeros(10, dtype=torch.long))
    opt.zero_grad()
    loss.backward()
    opt.step()
