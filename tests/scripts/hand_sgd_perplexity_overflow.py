"""A character LSTM trained by hand-written SGD (``p.data.add_(p.grad, alpha=-lr)``, no
torch.optim), its lr from ``--lr`` and its clipping from ``--clip``; every ``--log-interval``
batches it prints the perplexity ``math.exp(loss)``.

Run with ``--lr`` 10^4x its default and ``--clip`` too loose to act, the loss climbs from
ln(vocabulary) to hundreds while staying finite, and the script's own ``math.exp`` raises
``OverflowError: math range error``: the exception is where the divergence surfaced.
"""

import argparse
import math

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=2.0)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--batches", type=int, default=60)
parser.add_argument("--log-interval", type=int, default=20)
args = parser.parse_args()


class CharModel(nn.Module):
    def __init__(self, vocab: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(x))
        return self.decoder(out)


torch.manual_seed(0)
text = torch.randint(0, 50, (20_000,))
text[1::2] = (text[::2] * 7 + 3) % 50  # something to learn: each odd char follows the even one
model = CharModel(50, 32)
criterion = nn.CrossEntropyLoss()
lr = args.lr
total = 0.0
for batch in range(1, args.batches + 1):
    start = (batch * 35 * 8) % (len(text) - 35 * 8 - 1)
    chunk = text[start : start + 35 * 8 + 1]
    data, targets = chunk[:-1].view(35, 8), chunk[1:].view(35, 8)
    model.zero_grad()
    output = model(data)
    loss = criterion(output.view(-1, 50), targets.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
    total += loss.item()
    if batch % args.log_interval == 0:
        cur_loss = total / args.log_interval
        print(f"batch {batch} | loss {cur_loss:5.2f} | ppl {math.exp(cur_loss):8.2f}")
        total = 0.0
