# expect: backward-through-graph-twice detach-carried-state
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 12)
        self.fc = nn.Linear(12, 3)

    def forward(self, x, h):
        y, h = self.gru(x, h)
        return self.fc(y), h


model = Tagger()
opt = torch.optim.Adam(model.parameters())
hidden = torch.zeros(1, 2, 12)
for _step in range(4):
    logits, hidden = model(torch.randn(7, 2, 4), hidden)  # cause
    loss = logits.logsumexp(-1).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
