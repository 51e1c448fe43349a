# expect: shape-mismatch fix-layer-size
import torch
from torch import nn

model = nn.Linear(6, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 6)
y = torch.randint(0, 4, (8,))
logits = model(x).reshape(-1, 2)  # cause
loss = nn.functional.cross_entropy(logits, y)
loss.backward()
opt.step()
