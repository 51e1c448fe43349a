"""Root cause: the generator's hand-written normalisation divides by sqrt(variance) with no eps; a latent code of all zeros makes that variance 0, and the gradient of sqrt at 0 is inf.

A small GAN in the style of a DCGAN training loop: each batch makes ``fake = netG(code)``
once, steps the discriminator on it (detached), then steps the generator through the same
``fake``. The generator's latent codes are small integers (an InfoGAN-style discrete code);
now and then a sample's code is all zeros, its features are 0, and the normalisation's
``.clamp(min=1e-5)`` keeps the forward finite while the backward of ``sqrt`` is 1/(2 sqrt(0)):
the generator's gradient is nan. ``(var + 1e-5).sqrt()`` keeps it finite.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

CODE, HIDDEN = 4, 32


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(CODE, HIDDEN, bias=False)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(HIDDEN, 2))

    def forward(self, code):
        h = self.embed(code)
        h = h - h.mean(dim=1, keepdim=True)
        h = h / h.pow(2).mean(dim=1, keepdim=True).sqrt().clamp(min=1e-5)
        return self.head(h)


def main():
    torch.manual_seed(3)
    real = torch.randn(2048, 2) * 0.3 + torch.tensor([2.0, -1.0])
    loader = DataLoader(TensorDataset(real), batch_size=64, shuffle=True)
    netG = Generator()
    netD = nn.Sequential(nn.Linear(2, HIDDEN), nn.LeakyReLU(0.2), nn.Linear(HIDDEN, 1))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.999))
    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()
    for epoch in range(2):
        for i, (batch,) in enumerate(loader):
            code = torch.randint(-2, 3, (batch.shape[0], CODE)).float()
            fake = netG(code)
            netD.zero_grad()
            errD = criterion(netD(batch), torch.ones(batch.shape[0], 1))
            errD = errD + criterion(netD(fake.detach()), torch.zeros(batch.shape[0], 1))
            errD.backward()
            optimizerD.step()
            netG.zero_grad()
            errG = criterion(netD(fake), torch.ones(batch.shape[0], 1))
            errG.backward()
            optimizerG.step()
            print(f"[{epoch}][{i}] loss_D {errD.item():.4f} loss_G {errG.item():.4f}")
    print(f"final {errG.item():.4f}")


if __name__ == "__main__":
    main()
