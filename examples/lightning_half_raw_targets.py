"""Root cause: a Lightning Trainer with precision="16-true" casts a finite batch to float16, and its raw-unit targets pass 65504.

A price regressor over house features. The prices are in currency units (up to ~2e5) and the
data is finite, but "16-true" makes the Trainer cast every batch to float16 before
``training_step``: prices past 65504 become inf in that cast, and the loss is inf from the
first step whatever the model predicts. bfloat16 ("bf16-true") holds the same prices, or the
targets can be standardised.
"""

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class PriceRegressor(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        features, price = batch
        loss = F.mse_loss(self.net(features).squeeze(-1), price)
        print(f"step {self.global_step} loss {loss.item():.4g}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2, eps=1e-4)  # an eps fp16 holds


def main() -> None:
    torch.manual_seed(0)
    features = torch.randn(256, 6)
    weights = torch.tensor([3.0, -1.5, 2.0, 0.5, 1.0, -2.0])
    price = 1.2e5 + 4e4 * (features @ weights) / weights.norm()  # currency units
    loader = DataLoader(TensorDataset(features, price), batch_size=32, shuffle=True)
    trainer = Trainer(
        precision="16-true",
        max_epochs=3,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(PriceRegressor(), loader)


if __name__ == "__main__":
    main()
