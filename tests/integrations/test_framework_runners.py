"""Scripts run by a framework's own runner, under ``diagnose``: Hydra's job runner and a
Lightning Trainer that checkpoints a module kept in its hyper-parameters.

Hydra catches what its task function raises (``except Exception``), logs "Error executing
job with overrides ...", prints the traceback and exits 1. The tracer's stop is not the job's
error: the user sees the diagnosis, not the stop's traceback. A Lightning template that
passes its network to ``save_hyperparameters()`` pickles it in every checkpoint, which
must work as in a plain run.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from diagnose import diagnose_script
from tests.conftest import run_cli

pytestmark = pytest.mark.slow

HYDRA_APP = """
import hydra
import torch
from omegaconf import DictConfig
from torch import nn


@hydra.main(version_base=None, config_path="conf", config_name="config")
def train(cfg: DictConfig) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    for step in range(cfg.steps):
        x = torch.randn(16, 4)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    train()
"""


@pytest.fixture
def hydra_app(tmp_path: Path) -> Path:
    pytest.importorskip("hydra")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "config.yaml").write_text("lr: 0.01\nsteps: 6\n")
    app = tmp_path / "app.py"
    app.write_text(HYDRA_APP)
    return app


def run_app(
    app: Path, options: tuple[str, ...] = (), overrides: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess, dict]:
    """``diagnose OPTIONS app.py OVERRIDES`` in the app's folder, and the report it wrote."""
    report = app.parent / "report.json"
    done = run_cli(
        "--format",
        "text",
        "--report",
        str(report),
        *options,
        str(app),
        f"hydra.run.dir={app.parent / 'outputs'}",
        *overrides,
        cwd=app.parent,
    )
    return done, json.loads(report.read_text())


def test_a_hydra_job_whose_loss_turns_nan_shows_the_diagnosis_not_a_crash(hydra_app):
    done, report = run_app(hydra_app, overrides=("lr=1e30",))
    assert done.returncode == 1 and report["status"] == "nonfinite"
    # the verdict follows the path on its line, or on the next when the line would be too long
    first = re.escape(f"\ndiagnose: {hydra_app}:") + r"\s+nan born at step 1 in forward"
    assert re.search(first, done.stdout), done.stdout
    assert "first non-finite: step 1" in done.stdout
    shown = done.stdout + done.stderr
    for echo in ("Error executing job", "Traceback", "NonFinite", "HYDRA_FULL_ERROR"):
        assert echo not in shown, shown
    assert "step 0 loss" in done.stdout  # the job's own output is kept


def test_a_hydra_job_stopped_by_max_steps_is_a_clean_run(hydra_app):
    done, report = run_app(hydra_app, options=("--max-steps", "2"))
    assert done.returncode == 0 and report["status"] == "clean", done.stdout + done.stderr
    assert len(report["history"]) == 2
    assert "Error executing job" not in done.stderr and "Traceback" not in done.stderr


LIGHTNING_SCRIPT = '''
import sys

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Template(L.LightningModule):
    """The common template: the network is an argument, kept in the hyper-parameters."""

    def __init__(self, net: nn.Module, lr: float = 0.05) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = net

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


torch.manual_seed(0)
x = torch.randn(64, 4)
loader = DataLoader(TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
model = Template(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)))
trainer = L.Trainer(max_steps=20, accelerator="cpu", logger=False, enable_progress_bar=False,
                    enable_model_summary=False, default_root_dir=sys.argv[1],
                    callbacks=[L.pytorch.callbacks.ModelCheckpoint(
                        dirpath=sys.argv[1], every_n_train_steps=5, save_top_k=-1)])
trainer.fit(model, loader)
path = f"{sys.argv[1]}/last.ckpt"
trainer.save_checkpoint(path)
loaded = Template.load_from_checkpoint(path, weights_only=False)
probe = torch.ones(2, 4)
assert torch.equal(loaded.net(probe), model.net(probe))
assert not loaded.net._forward_hooks and not loaded.net._forward_pre_hooks
print("checkpoint loaded")
'''


def test_a_lightning_module_keeping_its_network_in_its_hparams_checkpoints(tmp_path):
    pytest.importorskip("lightning")
    script = tmp_path / "template.py"
    script.write_text(LIGHTNING_SCRIPT)
    report = diagnose_script(script, [str(tmp_path / "ckpt")])
    assert report.status == "clean", report.event
    assert len(report.history) == 20 and not all(row.detailed for row in report.history)
    saved = sorted(p.name for p in (tmp_path / "ckpt").glob("*.ckpt"))
    assert saved == [
        "epoch=0-step=5.ckpt",
        "epoch=1-step=10.ckpt",
        "epoch=1-step=15.ckpt",
        "epoch=2-step=20.ckpt",
        "last.ckpt",
    ]
