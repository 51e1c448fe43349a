"""Root cause: a float16 normalisation guards its divisor with an eps of 1e-8, which is 0 in
float16 (its smallest positive value is about 6e-8).

``ScaleNorm`` divides each token by its standard deviation plus 1e-8, which is enough in
float32. The model runs in float16 (``.half()``), where 1e-8 rounds to 0, so the padded
all-zero tokens of a batch with padding still divide 0 by 0 and give nan. An eps of 1e-4 is a
float16 number, and 1 / 1e-4 stays far below float16's largest value (65504).
"""

import torch
from torch import nn

torch.manual_seed(0)


class ScaleNorm(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-8)


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 32, bias=False)
        self.norm = ScaleNorm()
        self.head = nn.Linear(32, 4)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.norm(self.proj(tokens))))


model = Tagger().half()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

for step in range(20):
    tokens = torch.randn(6, 10, 8)
    if step >= 3:
        tokens[:, 7:] = 0  # from step 3 on, sequences are padded with all-zero tokens
    labels = torch.randint(0, 4, (6, 10))
    logits = model(tokens.half()).float()
    loss = nn.functional.cross_entropy(logits.reshape(-1, 4), labels.reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    print(f"step {step} loss {loss.item():.4f}")
