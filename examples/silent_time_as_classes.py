"""Root cause: cross_entropy gets the (N, T, C) output of a sequence tagger as it is, so it reads the T time steps as the classes.

Soft targets of the same shape make the call run without any error.
"""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, TAGS, STEPS = 50, 6, 10


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, 32, batch_first=True)
        self.head = nn.Linear(32, TAGS)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(tokens))
        return self.head(hidden)  # (N, T, TAGS)


torch.manual_seed(14)
tokens = torch.randint(0, VOCAB, (256, STEPS))
tags = F.one_hot(tokens % TAGS, TAGS).float()  # (N, T, TAGS): one tag per token
model = Tagger()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(3):
    for i in range(0, 256, 32):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens[i : i + 32]), tags[i : i + 32])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
