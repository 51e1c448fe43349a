"""A small GAN on 2-D points whose generator step clears its gradients between backward and
step: the discriminator learns, its loss falls, while the generator never moves."""

import torch
from torch import nn


def main():
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    discriminator = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    for step in range(200):
        real = torch.randn(64, 2) * 0.3 + torch.tensor([2.0, -1.0])
        fake = generator(torch.randn(64, 4))

        opt_d.zero_grad()
        d_loss = bce(discriminator(real), torch.ones(64, 1)) + bce(
            discriminator(fake.detach()), torch.zeros(64, 1)
        )
        d_loss.backward()
        opt_d.step()

        g_loss = bce(discriminator(fake), torch.ones(64, 1))
        g_loss.backward()
        opt_g.zero_grad()
        opt_g.step()
        if step % 50 == 0 or step == 199:
            print(f"step {step} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")


if __name__ == "__main__":
    main()
