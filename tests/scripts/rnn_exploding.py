"""Exploding gradients in a plain RNN without clipping (large recurrent weights, long input)."""

import torch
from torch import nn

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(4, 64, nonlinearity="tanh", batch_first=True)
        self.head = nn.Linear(64, 1)
        with torch.no_grad():
            self.rnn.weight_hh_l0.copy_(torch.eye(64) * 3.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


model = Model()
opt = torch.optim.SGD(model.parameters(), lr=1.0)
x = torch.randn(4, 50, 4) * 0.01
y = torch.ones(4, 1)
for _step in range(30):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
print("done")
