# expect: index-out-of-range fix-label-range
import torch
from torch import nn

VOCAB = 30


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, 8)
        self.lm = nn.Linear(8, VOCAB)

    def forward(self, ids):
        return self.lm(self.tokens(ids))


model = Tiny()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ids = torch.randint(0, VOCAB + 3, (2, 9))  # cause
loss = model(ids).logsumexp(-1).mean()
loss.backward()
opt.step()
