"""Root cause: the LightningCLI config configs/lightning_cli.yaml sets model.lr: 1.0, far too high for SGD with momentum.

In the style of a LightningCLI application: the LightningModule's and the DataModule's
``__init__`` arguments, and the Trainer's, are read from a YAML config
(``default_config_files``, or ``--config`` on the command line) and ``--model.lr=...`` style
arguments; the script never spells the lr's value, and never builds the Trainer itself. The fix
belongs in the YAML file (or in a ``--model.lr=`` argument); the Trainer's clipping, in its
``trainer:`` section.
"""

import os

import torch
from lightning.pytorch import LightningDataModule, LightningModule
from lightning.pytorch.cli import LightningCLI
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

HERE = os.path.dirname(os.path.abspath(__file__))


class Regressor(LightningModule):
    def __init__(self, hidden: int = 32, lr: float = 0.01, momentum: float = 0.9):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(
            self.parameters(), lr=self.hparams.lr, momentum=self.hparams.momentum
        )


class Waves(LightningDataModule):
    def __init__(self, batch_size: int = 32, samples: int = 1024):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage=None):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(self.samples, 8, generator=g)
        y = torch.sin(x).sum(dim=1, keepdim=True)
        self.train_set = TensorDataset(x, y)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)


def main():
    cli = LightningCLI(
        Regressor,
        Waves,
        run=False,
        save_config_callback=None,
        parser_kwargs={
            "default_config_files": [os.path.join(HERE, "configs", "lightning_cli.yaml")]
        },
    )
    cli.trainer.fit(cli.model, cli.datamodule)
    print(f"final loss {cli.trainer.callback_metrics['train_loss'].item():.4g}")


if __name__ == "__main__":
    main()
