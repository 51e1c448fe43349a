"""Root cause: the table's features, scaled to [0, 1), are stored as an integer tensor, which
truncates every one of them to 0; the model sees only zeros and its loss stays at chance.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(11)
raw = torch.rand(600, 6)  # features already scaled to [0, 1)
labels = (raw[:, 0] + raw[:, 1] > 1.0).long()
features = raw.to(torch.int64)  # meant: keep them as floats
loader = DataLoader(TensorDataset(features, labels), batch_size=30, shuffle=True)

model = nn.Sequential(nn.Linear(6, 24), nn.ReLU(), nn.Linear(24, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(8):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x.float()), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
