"""Root cause: the GRU's hidden state is carried from one batch to the next without .detach(),
so the second backward goes back into the first batch's graph, which the first backward freed.

A small character-level GRU language model over one long synthetic text, trained on
consecutive chunks (truncated backpropagation through time). ``hidden.detach()`` where the
state is passed on fixes it.
"""

import torch
from torch import nn

torch.manual_seed(0)
VOCAB, CHUNK = 12, 16


class CharGRU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, tokens, hidden):
        out, hidden = self.gru(self.embed(tokens), hidden)
        return self.head(out), hidden


text = (torch.arange(4 * 400) * 7 % VOCAB).reshape(4, 400)
model = CharGRU()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
hidden = torch.zeros(1, 4, 32)
for step in range(20):
    start = (step * CHUNK) % (400 - CHUNK - 1)
    inputs, targets = text[:, start : start + CHUNK], text[:, start + 1 : start + CHUNK + 1]
    logits, hidden = model(inputs, hidden)
    loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
