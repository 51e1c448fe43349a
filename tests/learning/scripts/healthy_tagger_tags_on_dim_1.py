"""The healthy look-alike of tagger_classes_on_time_axis.py: the same tagger, its logits
turned to (batch, tags, time) before cross_entropy."""

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
            loss = nn.functional.cross_entropy(model(xb).transpose(1, 2), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
