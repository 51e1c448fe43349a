# expect: inplace-modified-saved-tensor make-op-out-of-place
import torch
import torch.nn.functional as F

weights = torch.randn(6, 3, requires_grad=True)
opt = torch.optim.SGD([weights], lr=0.1)


def step(batch):
    probs = F.softmax(batch @ weights, dim=1)
    probs += 1e-6  # cause
    loss = -probs.log().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


for _i in range(3):
    step(torch.randn(5, 6))
