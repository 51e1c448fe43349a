"""A regression MLP whose first steps run at a huge lr (a schedule dict keyed by step): the
loss spikes, the updates push every unit of the hidden ReLU layer below zero, and from then on
the layer outputs only zeros: the loss falls back from its spike, but nothing before the dead
layer ever gets a gradient again."""

import torch
from torch import nn

SCHEDULE = {0: 0.5, 3: 1e-3}  # step -> lr from that step on


def lr_at(step):
    return SCHEDULE[max(s for s in SCHEDULE if s <= step)]


if __name__ == "__main__":
    torch.manual_seed(2)
    x = torch.randn(512, 10)
    y = x[:, :3].sum(dim=1, keepdim=True)
    model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr_at(0))
    for step in range(160):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        xb, yb = x[(step * 32) % 512 :][:32], y[(step * 32) % 512 :][:32]
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        if step % 40 == 0 or step < 4:
            print(f"step {step} loss {loss.item():.4f}")
