"""A sequence tagger whose logits, (batch, time, tags) from a projection followed by dropout
and a temperature, go to cross_entropy as they are: cross_entropy reads the classes from dim
1, the time axis (here as long as the tag set, so no shape check fails), and compares each
position's score over time steps with a tag."""

import torch
from torch import nn

HP = {"tags": 12, "steps": 12, "vocab": 50, "dim": 32, "temperature": 2.0}


class Tagger(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.embed = nn.Embedding(hp["vocab"], hp["dim"])
        self.rnn = nn.GRU(hp["dim"], hp["dim"], batch_first=True)
        self.project = nn.Linear(hp["dim"], hp["tags"])
        self.drop = nn.Dropout(0.1)
        self.temperature = hp["temperature"]

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.drop(self.project(hidden)) / self.temperature


if __name__ == "__main__":
    torch.manual_seed(0)
    tokens = torch.randint(0, HP["vocab"], (256, HP["steps"]))
    tags = tokens % HP["tags"]  # each token's tag: easy to learn per position
    model = Tagger(HP)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(12):
        for xb, yb in zip(tokens.split(32), tags.split(32), strict=True):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
