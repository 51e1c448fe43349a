# expect: dtype-mismatch cast-dtype
import torch
from torch import nn

model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(6, 3)
y = torch.randint(0, 2, (6, 1))
for _ in range(2):
    loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)  # cause
    opt.zero_grad()
    loss.backward()
    opt.step()
