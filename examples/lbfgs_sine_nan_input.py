"""Root cause: the training signal holds nan values (a few dropped sensor readings).

In the style of pytorch/examples' time_sequence_prediction: an LSTMCell steps over each sine
wave one time step at a time in the model's forward, LBFGS re-evaluates the loss through a
closure, and the outer loop only counts optimizer steps over the same fixed tensors. Two
readings of one wave were lost and stored as nan; the first forward pass carries them into the
LSTM state and the loss is nan. There is no batch loop to skip a batch in: the data must be
cleaned (or the lost readings imputed) where it is loaded.
"""

import torch
from torch import nn

torch.manual_seed(2)

T, WAVES = 60, 12
phase = torch.rand(WAVES, 1) * 6.28
wave = torch.sin(torch.arange(T).float() / 4.0 + phase)
wave[5, 17] = float("nan")  # a dropped reading
wave[5, 18] = float("nan")
input, target = wave[:, :-1], wave[:, 1:]


class Sequence(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTMCell(1, 24)
        self.linear = nn.Linear(24, 1)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        outputs = []
        h = torch.zeros(input.size(0), 24)
        c = torch.zeros(input.size(0), 24)
        for input_t in input.split(1, dim=1):
            h, c = self.lstm(input_t, (h, c))
            outputs.append(self.linear(h))
        return torch.cat(outputs, dim=1)


seq = Sequence()
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=4)

for i in range(6):

    def closure():
        optimizer.zero_grad()
        out = seq(input)
        loss = criterion(out, target)
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    print(f"step {i} loss {loss.item():.4g}")
