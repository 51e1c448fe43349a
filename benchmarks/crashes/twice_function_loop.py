# expect: backward-through-graph-twice detach-carried-state
import torch
from torch import nn


def train(steps):
    lstm = nn.LSTM(2, 4, batch_first=True)
    head = nn.Linear(4, 1)
    opt = torch.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-3)
    hc = (torch.zeros(1, 3, 4), torch.zeros(1, 3, 4))
    for _ in range(steps):
        seq, hc = lstm(torch.randn(3, 6, 2), hc)  # cause
        loss = head(seq[:, -1]).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


train(3)
