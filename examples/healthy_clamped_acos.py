"""Healthy: the same angular loss, with the cosine similarity clamped into (-1, 1) before acos,
so two equal views give a finite angle and a finite gradient."""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.05)

for step in range(10):
    view_a = torch.randn(16, 8)
    view_b = view_a if step == 3 else view_a + 0.3 * torch.randn(16, 8)
    cos = F.cosine_similarity(encoder(view_a), encoder(view_b), dim=-1)
    angle = torch.acos(cos.clamp(-1 + 1e-6, 1 - 1e-6))
    loss = angle.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
