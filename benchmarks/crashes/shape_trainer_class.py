# expect: shape-mismatch fix-layer-size
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.out = nn.Linear(128, n_out)  # cause

    def forward(self, x):
        return self.out(self.body(x))


class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


trainer = Trainer(Classifier(12, 3))
for _ in range(2):
    trainer.step(torch.randn(5, 12), torch.randint(0, 3, (5,)))
