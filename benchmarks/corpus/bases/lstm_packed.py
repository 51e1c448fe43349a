"""An LSTM classifier over padded variable-length sequences, packed before the LSTM."""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


class SequenceClassifier(nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        scores = self.out(h_n[-1])
        return scores


def main() -> None:
    torch.manual_seed(3)
    seqs = torch.randn(256, 12, 4)
    lengths = torch.randint(4, 13, (256,))
    steps = torch.arange(12)[None, :] < lengths[:, None]
    seqs = seqs * steps[:, :, None]
    classes = (seqs[:, :, 0].sum(1) > 0).long()
    model = SequenceClassifier(4, 24, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(40):
        pick = torch.randint(0, 256, (32,))
        optimizer.zero_grad()
        scores = model(seqs[pick], lengths[pick])
        loss = nn.functional.cross_entropy(scores, classes[pick])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
