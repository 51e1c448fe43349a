"""Root cause: the Hydra config configs/hydra_train.yaml sets optim.lr: 2.5, far too high for SGD with momentum.

In the style of a Hydra application: ``@hydra.main`` composes ``configs/hydra_train.yaml``
with ``key=value`` overrides from the command line (``python hydra_yaml_high_lr.py
optim.lr=0.05``) and hands the job a ``DictConfig``. The config also keeps Hydra from
writing an outputs/ folder or changing the working directory. The fix belongs in the YAML
file (or in an ``optim.lr=...`` override).
"""

import hydra
import torch
from omegaconf import DictConfig
from torch import nn


def build_model(cfg: DictConfig) -> nn.Module:
    return nn.Sequential(
        nn.Conv1d(1, cfg.model.channels, kernel_size=5, padding=2),
        nn.ReLU(),
        nn.Conv1d(cfg.model.channels, cfg.model.channels, kernel_size=5, padding=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(),
        nn.Linear(cfg.model.channels, 1),
    )


@hydra.main(version_base=None, config_path="configs", config_name="hydra_train")
def main(cfg: DictConfig) -> None:
    torch.manual_seed(cfg.seed)
    signals = torch.randn(512, 1, 64)
    targets = signals.pow(2).mean(dim=(1, 2)).unsqueeze(1)
    model = build_model(cfg)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, momentum=cfg.optim.momentum)
    for step in range(cfg.train.steps):
        idx = torch.randint(0, len(signals), (cfg.train.batch_size,))
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(signals[idx]), targets[idx])
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4g}")


if __name__ == "__main__":
    main()
