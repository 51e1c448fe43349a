"""Root cause: the model ends in nn.Softmax and its probabilities go into nn.CrossEntropyLoss, which expects logits.

CrossEntropyLoss applies log_softmax itself; on probabilities the loss can barely fall and the
gradients shrink.
"""

import torch
from torch import nn

torch.manual_seed(5)
x = torch.randn(1000, 12)
y = (x[:, :3] @ torch.tensor([1.0, -2.0, 0.5]) > 0).long() + (x[:, 3] > 1).long()
model = nn.Sequential(
    nn.Linear(12, 48),
    nn.ReLU(),
    nn.Linear(48, 3),
    nn.Softmax(dim=1),
)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    perm = torch.randperm(1000)
    for i in range(0, 1000, 50):
        idx = perm[i : i + 50]
        optimizer.zero_grad()
        loss = criterion(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
    print(epoch, loss.item())
