"""Root cause: exploding gradients in a ReLU RNN trained by a Lightning Trainer without gradient clipping.

The same identity-initialised ReLU RNN (IRNN) over sequences of 80 steps as
rnn_exploding_grads.py, as a LightningModule: backpropagation through time multiplies the
gradient by the recurrent matrix 80 times, nothing clips it, and a few steps later the
gradients overflow to inf. The Trainer runs ``backward()`` itself, so the clip is its own
``gradient_clip_val`` argument, not a ``clip_grad_norm_`` call in the script.
"""

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

SEQ_LEN, HIDDEN = 80, 48


class SequenceClassifier(LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(4, HIDDEN, nonlinearity="relu", batch_first=True)
        with torch.no_grad():
            self.rnn.weight_hh_l0.copy_(torch.eye(HIDDEN))  # IRNN init
            self.rnn.bias_hh_l0.zero_()
        self.head = nn.Linear(HIDDEN, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        print(f"step {self.global_step} loss {loss.item():.4g}")
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=1e-3, momentum=0.9)


def main() -> None:
    torch.manual_seed(8)
    model = SequenceClassifier()
    x = torch.randn(32, SEQ_LEN, 4)
    y = torch.randint(0, 3, (32,))
    loader = DataLoader(TensorDataset(x, y), batch_size=32)
    trainer = Trainer(
        max_epochs=40,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
