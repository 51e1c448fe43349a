"""A Transformer encoder classifying padded token sequences, with a key padding mask."""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab: int, width: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width, padding_idx=0)
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.cls = nn.Linear(width, classes)

    def forward(self, tokens, pad):
        h = self.encoder(self.embed(tokens), src_key_padding_mask=pad)
        pooled = h.masked_fill(pad[:, :, None], 0.0).sum(1) / (~pad).sum(1, keepdim=True)
        logits = self.cls(pooled)
        return logits


def main() -> None:
    torch.manual_seed(5)
    tokens = torch.randint(1, 20, (384, 10))
    lengths = torch.randint(3, 11, (384,))
    pad = torch.arange(10)[None, :] >= lengths[:, None]
    tokens = tokens.masked_fill(pad, 0)
    labels = ((tokens == 3).any(1) | (tokens == 7).any(1)).long()
    model = Encoder(20, 32, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for step in range(40):
        b = torch.randint(0, 384, (32,))
        optimizer.zero_grad()
        logits = model(tokens[b], pad[b])
        loss = nn.functional.cross_entropy(logits, labels[b])
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
