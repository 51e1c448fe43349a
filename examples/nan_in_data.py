"""Root cause: the training data contains NaN values (missing measurements read as nan).

The table is loaded with a few missing entries that became float('nan'). Nothing in the model is
wrong: the batch that holds sample 173 carries the nan into the first Linear layer, the loss is
nan and every weight is nan after that step. Drop or impute the non-finite samples.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(4)

table = torch.randn(400, 10)
table[173, 2] = float("nan")  # a missing measurement
table[301, 7] = float("nan")
target = table[:, :3].nan_to_num().sum(dim=1, keepdim=True)

loader = DataLoader(TensorDataset(table, target), batch_size=25, shuffle=False)
model = nn.Sequential(nn.Linear(10, 16), nn.SiLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    for step, (inputs, labels) in enumerate(loader):
        optimizer.zero_grad()
        loss = nn.functional.smooth_l1_loss(model(inputs), labels)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} step {step} loss {loss.item():.4g}")
