"""A small CNN fed raw 0-255 pixels by its own Dataset class (uint8 images turned to float with
no scaling): the first convolution sees inputs in the hundreds, its ReLUs and logits are
huge, and the classifier cannot settle."""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Stripes(Dataset):
    """8x8 grey images: class 1 has a bright horizontal stripe, class 0 a vertical one."""

    def __init__(self, n):
        generator = torch.Generator().manual_seed(0)
        self.labels = torch.randint(0, 2, (n,), generator=generator)
        noise = torch.randint(0, 60, (n, 1, 8, 8), generator=generator)
        self.images = noise.to(torch.uint8)
        rows = torch.randint(0, 8, (n,), generator=generator)
        for i in range(n):
            if self.labels[i]:
                self.images[i, 0, rows[i], :] = 255
            else:
                self.images[i, 0, :, rows[i]] = 255

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i].float(), self.labels[i]


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 2)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(Stripes(512), batch_size=32, shuffle=True)
    for epoch in range(10):
        for images, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
