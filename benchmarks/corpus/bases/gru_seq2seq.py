"""A GRU encoder-decoder learning to reverse short token sequences, teacher forcing."""

import torch
import torch.nn.functional as F
from torch import nn

VOCAB = 12
BOS = 0


class Seq2Seq(nn.Module):
    def __init__(self, vocab: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, src, tgt_in):
        _, state = self.encoder(self.embed(src))
        dec, _ = self.decoder(self.embed(tgt_in), state)
        logits = self.proj(dec)
        return logits


def main() -> None:
    torch.manual_seed(4)
    src = torch.randint(1, VOCAB, (512, 6))
    tgt = src.flip(1)
    tgt_in = torch.cat([torch.full((512, 1), BOS), tgt[:, :-1]], dim=1)
    model = Seq2Seq(VOCAB, 48)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(50):
        b = torch.randint(0, 512, (64,))
        optimizer.zero_grad()
        logits = model(src[b], tgt_in[b])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt[b].reshape(-1))
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
