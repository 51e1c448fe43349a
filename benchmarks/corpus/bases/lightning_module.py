"""A LightningModule trained by a Lightning Trainer (no logger, no checkpoints)."""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class LitClassifier(L.LightningModule):
    def __init__(self, features: int, classes: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(features, 32)
        self.classifier = nn.Linear(32, classes)

    def forward(self, x):
        h = torch.relu(self.hidden(x))
        logits = self.classifier(h)
        return logits

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=5e-3)


def main() -> None:
    torch.manual_seed(11)
    inputs = torch.randn(640, 6)
    labels = (inputs[:, 0] - inputs[:, 1] > 0).long()
    loader = DataLoader(TensorDataset(inputs, labels), batch_size=32, shuffle=True)
    model = LitClassifier(6, 2)
    trainer = L.Trainer(
        max_steps=40,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
