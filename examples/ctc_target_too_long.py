"""Root cause: one utterance has fewer input frames than its transcript has symbols, so CTC has no
alignment for it and the loss is inf (its gradient nan).

A small GRU acoustic model trained with nn.CTCLoss on padded feature sequences. Utterance 13 of
the dataset is a clipped recording: 6 frames for a 9-symbol transcript. The second batch holds
it, and CTCLoss is inf. ``nn.CTCLoss(zero_infinity=True)`` (or dropping such samples) fixes it.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
VOCAB = 12  # 0 is the CTC blank


class Utterances(Dataset):
    def __init__(self, n: int) -> None:
        self.frames = [int(torch.randint(20, 30, ())) for _ in range(n)]
        self.labels = [int(torch.randint(4, 10, ())) for _ in range(n)]
        self.frames[13] = 6  # a clipped recording: 6 frames for its 9-symbol transcript
        self.labels[13] = 9

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, i: int):
        return torch.randn(self.frames[i], 8), torch.randint(1, VOCAB, (self.labels[i],))


def collate(batch):
    feats, labels = zip(*batch, strict=True)
    x = nn.utils.rnn.pad_sequence(feats, batch_first=True)
    y = torch.cat(labels)
    return x, y, torch.tensor([len(f) for f in feats]), torch.tensor([len(t) for t in labels])


class Acoustic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(8, 32, batch_first=True)
        self.out = nn.Linear(32, VOCAB)

    def forward(self, x):
        return self.out(self.rnn(x)[0]).log_softmax(-1)


model = Acoustic()
ctc = nn.CTCLoss(blank=0)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loader = DataLoader(Utterances(32), batch_size=8, collate_fn=collate)

for epoch in range(2):
    for step, (x, y, x_len, y_len) in enumerate(loader):
        log_probs = model(x).transpose(0, 1)  # (T, N, C)
        loss = ctc(log_probs, y, x_len, y_len)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
