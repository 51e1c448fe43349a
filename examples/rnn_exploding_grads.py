"""Root cause: exploding gradients in a ReLU RNN trained without gradient clipping.

An identity-initialised ReLU RNN (IRNN) reads sequences of 80 steps. Backpropagation through
time multiplies the gradient by the recurrent matrix 80 times: the gradient norm is already ~600
at the first step and spikes to ~1e7 at the second; nothing clips it, so the update pushes the
recurrent weights past 1 and a few steps later the gradients overflow to inf.
``torch.nn.utils.clip_grad_norm_(params, 1.0)`` after ``backward()`` keeps every update bounded.
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(8)
SEQ_LEN, HIDDEN = 80, 48


class SequenceClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(4, HIDDEN, nonlinearity="relu", batch_first=True)
        with torch.no_grad():
            self.rnn.weight_hh_l0.copy_(torch.eye(HIDDEN))  # IRNN init
            self.rnn.bias_hh_l0.zero_()
        self.head = nn.Linear(HIDDEN, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


model = SequenceClassifier()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
x = torch.randn(32, SEQ_LEN, 4)
y = torch.randint(0, 3, (32,))

for step in range(40):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4g}")
