"""A tiny LightningModule trained by ``lightning.Trainer`` on CPU.

    python lightning_regression.py                   # healthy
    python lightning_regression.py --lr 1e4 --clip 0 # SGD with a learning rate far too high
    python lightning_regression.py --nan-data        # one NaN in one row of the data

``--precision`` and ``--clip-algorithm`` pass straight to the Trainer. ``--callback REPORT``
adds ``diagnose.integrations.lightning.DiagnoseCallback`` (writing REPORT), to compare the
callback with the zero-code ``diagnose lightning_regression.py``.
"""

import argparse

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--clip", type=float, default=1.0, help="gradient_clip_val (0: none)")
parser.add_argument("--clip-algorithm", default="norm", choices=["norm", "value"])
parser.add_argument("--precision", default="32-true")
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--nan-data", action="store_true")
parser.add_argument("--callback", metavar="REPORT", help="trace with DiagnoseCallback")
args = parser.parse_args()


class Regressor(L.LightningModule):
    def __init__(self, lr: float) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=100, gamma=0.5)
        return {"optimizer": optimizer, "lr_scheduler": scheduler}


torch.manual_seed(0)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
if args.nan_data:
    x[37, 2] = float("nan")
loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False)

callbacks = []
if args.callback:
    from diagnose.integrations.lightning import DiagnoseCallback

    callbacks.append(DiagnoseCallback(report_path=args.callback))
trainer = L.Trainer(
    accelerator="cpu",
    max_steps=args.steps,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    precision=args.precision,
    gradient_clip_val=args.clip or None,
    gradient_clip_algorithm=args.clip_algorithm,
    callbacks=callbacks,
)
trainer.fit(Regressor(args.lr), loader)
print("done")
