# expect: dtype-mismatch cast-dtype
import torch
from torch import nn


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(1))  # cause


bag = Bag()
opt = torch.optim.SGD(bag.parameters(), lr=0.1)
ids = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
loss = bag(ids).sum()
loss.backward()
opt.step()
