"""A Trainer class with callbacks whose step clears, runs backward and steps, in that order:
the healthy look-alike of trainer_clears_before_step.py."""

import torch
from torch import nn

CONFIG = {"lr": 0.05, "epochs": 6, "batches": 20, "batch_size": 32}


class PrintLoss:
    def on_epoch_end(self, trainer, epoch, loss):
        print(f"epoch {epoch} loss {loss:.4f}")


class Trainer:
    def __init__(self, model, config, callbacks):
        self.model = model
        self.config = config
        self.callbacks = callbacks
        self.optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)

    def training_step(self, xb, yb):
        loss = nn.functional.cross_entropy(self.model(xb), yb)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, data):
        for epoch in range(self.config["epochs"]):
            for xb, yb in data:
                loss = self.training_step(xb, yb)
            for callback in self.callbacks:
                callback.on_epoch_end(self, epoch, loss)


def batches(config):
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(config["batches"] * config["batch_size"], 12, generator=generator)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return list(zip(x.split(config["batch_size"]), y.split(config["batch_size"]), strict=True))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 2))
    Trainer(model, CONFIG, [PrintLoss()]).fit(batches(CONFIG))
