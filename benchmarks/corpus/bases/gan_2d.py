"""A GAN on a 2-D Gaussian: two MLPs, two Adam optimizers taking turns, BCE with logits."""

import torch
from torch import nn


class Generator(nn.Module):
    def __init__(self, noise: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(noise, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, points):
        return self.net(points)


def main() -> None:
    torch.manual_seed(8)
    real_data = torch.randn(1024, 2) * 0.5 + torch.tensor([2.0, -1.0])
    gen = Generator(4)
    disc = Discriminator()
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    for step in range(40):
        real = real_data[torch.randint(0, 1024, (64,))]
        fake = gen(torch.randn(64, 4))
        opt_d.zero_grad()
        d_loss = bce(disc(real), torch.ones(64, 1)) + bce(disc(fake.detach()), torch.zeros(64, 1))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(disc(fake), torch.ones(64, 1))
        g_loss.backward()
        opt_g.step()
        print(f"step {step} d {d_loss.item():.4f} g {g_loss.item():.4f}")


if __name__ == "__main__":
    main()
