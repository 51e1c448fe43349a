# expect: index-out-of-range fix-label-range
import torch
import torch.nn.functional as F

logits_layer = torch.nn.Linear(4, 3)
opt = torch.optim.SGD(logits_layer.parameters(), lr=0.1)
targets = torch.tensor([0, 2, -1, 1])  # cause
for _step in range(2):
    out = logits_layer(torch.randn(4, 4))
    loss = F.nll_loss(F.log_softmax(out, 1), targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
