# expect: dtype-mismatch cast-dtype
import torch
from torch import nn

model = nn.Linear(5, 4)
criterion = nn.NLLLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
labels = torch.tensor([0.0, 1.0, 3.0])
for _step in range(2):
    logp = torch.log_softmax(model(torch.randn(3, 5)), dim=1)
    loss = criterion(logp, labels)  # cause
    opt.zero_grad()
    loss.backward()
    opt.step()
