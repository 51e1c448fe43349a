"""Root cause: --weight-decay defaults to 50 where 0.05 was meant: with AdamW at lr 1e-2, each
step's decoupled decay takes half of every weight's size off it, and the weights never grow.

The loss sits near the chance level; the labels are fine.
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=1e-2)
parser.add_argument("--weight-decay", type=float, default=50.0)
parser.add_argument("--epochs", type=int, default=12)
args = parser.parse_args()

torch.manual_seed(3)
x = torch.randn(768, 12)
y = (x @ torch.randn(12, 4)).argmax(1)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
for epoch in range(args.epochs):
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
