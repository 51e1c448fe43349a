"""A small VAE on synthetic binary patterns: reparameterisation, BCE plus KL, Adam."""

import torch
import torch.nn.functional as F
from torch import nn


class VAE(nn.Module):
    def __init__(self, features: int, latent: int) -> None:
        super().__init__()
        self.enc = nn.Linear(features, 32)
        self.mu = nn.Linear(32, latent)
        self.logvar = nn.Linear(32, latent)
        self.dec = nn.Sequential(nn.Linear(latent, 32), nn.ReLU(), nn.Linear(32, features))

    def forward(self, x):
        h = torch.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = self.dec(z)
        return recon, mu, logvar


def main() -> None:
    torch.manual_seed(9)
    protos = (torch.rand(4, 16) > 0.5).float()
    data = protos[torch.randint(0, 4, (512,))]
    model = VAE(16, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(50):
        x = data[torch.randint(0, 512, (64,))]
        optimizer.zero_grad()
        recon, mu, logvar = model(x)
        rec = F.binary_cross_entropy_with_logits(recon, x, reduction="sum") / x.shape[0]
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.shape[0]
        loss = rec + kl
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
