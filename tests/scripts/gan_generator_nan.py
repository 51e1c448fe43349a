"""A tiny GAN, a discriminator step then a generator step per batch, two Adam optimizers.
The generator normalises its features by their standard deviation, written by hand; at step 6
a batch of all-zero noise makes every feature 0, and the gradient of sqrt at 0 is inf: the
generator's gradient is nan while every forward stays finite.

Root cause: the generator's `h / h.var(...).sqrt().clamp(min=1e-5)` has no eps inside the
sqrt; sqrt(0)'s backward is inf (the clamp's own backward passes it on).
Fix: guard the sqrt (`(h.var(...) + 1e-5).sqrt()`).
"""

import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 16, bias=False)
        self.act = nn.ReLU()
        self.out = nn.Linear(16, 2)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.fc(z)
        centred = h - h.mean(dim=1, keepdim=True)
        h = centred / centred.pow(2).mean(dim=1, keepdim=True).sqrt().clamp(min=1e-5)
        return self.out(self.act(h))


torch.manual_seed(0)
G = Generator()
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
bce = nn.BCEWithLogitsLoss()
real = torch.randn(256, 2) * 0.5 + 2.0
for step in range(20):
    z = torch.randn(32, 4) if step != 6 else torch.zeros(32, 4)
    batch = real[torch.randint(0, 256, (32,))]
    opt_d.zero_grad()
    fake = G(z)
    d_loss = bce(D(batch), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(32, 1))
    g_loss.backward()
    opt_g.step()
print("final", d_loss.item(), g_loss.item())
