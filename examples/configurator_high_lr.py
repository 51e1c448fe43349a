"""Root cause: the config file configs/configurator_sgd.py sets learning_rate = 2.0, far too high for SGD.

In the style of nanoGPT: the settings are module globals, overridden by a config file and then
by ``--key=value`` arguments through an ``exec``'d configurator. The optimizer is built from
the global ``learning_rate``, whose value in the script (1e-2) is not the one the run used;
the fix belongs in the config file (or in a ``--learning_rate=...`` argument).
"""

import os
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
learning_rate = 1e-2
max_iters = 60
# the config file first, then the command line's --key=value overrides
sys.argv[1:1] = [os.path.join(HERE, "configs", "configurator_sgd.py")]
exec(open(os.path.join(HERE, "configs", "configurator.py")).read())  # noqa: SIM115


class Regressor(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(d_hidden, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


torch.manual_seed(1)
x = torch.randn(512, 20)
y = x @ torch.randn(20, 1) * 3.0 + 1.0
model = Regressor(20, 64)
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
loss_fn = nn.MSELoss()
for it in range(max_iters):
    idx = torch.randint(0, 512, (64,))
    optimizer.zero_grad()
    loss = loss_fn(model(x[idx]), y[idx])
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4g}")
