"""Healthy: a student distilled from a teacher run in eval mode under no_grad and held by no optimizer.

No root cause: this script must produce no event and no fix.
"""

import torch
import torch.nn.functional as F
from torch import nn


def mlp(width: int) -> nn.Module:
    return nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, 4))


torch.manual_seed(27)
x = torch.randn(1000, 16)
y = x[:, :4].argmax(dim=1)
teacher = mlp(128)
teacher_opt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
for _step in range(100):
    idx = torch.randint(0, 1000, (64,))
    teacher_opt.zero_grad()
    F.cross_entropy(teacher(x[idx]), y[idx]).backward()
    teacher_opt.step()

teacher.eval()
student = mlp(32)
optimizer = torch.optim.Adam(student.parameters(), lr=3e-3)
for _step in range(150):
    idx = torch.randint(0, 1000, (64,))
    with torch.no_grad():
        soft = F.softmax(teacher(x[idx]) / 2.0, dim=1)
    logits = student(x[idx])
    loss = F.kl_div(F.log_softmax(logits / 2.0, dim=1), soft, reduction="batchmean")
    loss = loss + F.cross_entropy(logits, y[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("student", loss.item())
