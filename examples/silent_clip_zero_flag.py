"""Root cause: --max-grad-norm defaults to 0, meant as "no clipping", but the loop clips on
every step: clip_grad_norm_ with max_norm 0 scales every gradient to 0, and no weight moves.

The loss stays at its first value. It looks like an lr far too low; raising the lr would
multiply a zero gradient.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--max-grad-norm", type=float, default=0.0, help="0 disables clipping")
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()

torch.manual_seed(5)
x = torch.randn(640, 10)
y = (x[:, :3].sum(1, keepdim=True) + 0.1 * torch.randn(640, 1)).tanh()
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
for epoch in range(args.epochs):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
