"""A healthy run whose loss is a linear objective: it falls below zero and on, as negative
log-likelihoods, Wasserstein critics and ELBO terms do. Its magnitude grows; its value falls."""

import torch

torch.manual_seed(0)
direction = torch.randn(8)
w = torch.nn.Parameter(torch.randn(8) * 0.1)
optimizer = torch.optim.SGD([w], lr=0.05)
for step in range(120):
    x = torch.randn(64, 8) * 0.1 + direction
    loss = -(x @ w).mean()  # maximise the projection: no lower bound
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 40 == 0 or step == 119:
        print(f"step {step} loss {loss.item():.3f}")
