"""A nan in the targets a DataLoader hands to a loss module is told as non-finite targets,
also when the loss's op is not named: the loss call's own input was non-finite while the
model's outputs were finite."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

SCRIPT = """
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class Pairs(Dataset):
    def __init__(self):
        self.x = torch.randn(256, 6)
        self.y = (self.x[:, :2].sum(1, keepdim=True) > 0).float()
        self.y[{row}] = float("nan")

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
criterion = nn.{loss}()
for epoch in range(3):
    for xb, yb in DataLoader(Pairs(), batch_size=32, shuffle=True):
        opt.zero_grad()
        criterion(net(xb), yb).backward()
        opt.step()
"""


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["BCEWithLogitsLoss", "MSELoss", "L1Loss"])
def test_a_nan_target_from_the_loader_is_nonfinite_targets(tmp_path, loss):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(row=100, loss=loss))
    report = tmp_path / "r.json"
    done = run_cli("--format", "json", "--report", str(report), str(script), cwd=tmp_path)
    data = json.loads(report.read_text())
    assert done.returncode == 1 and data["status"] == "nonfinite", done.stderr
    assert data["event"]["phase"] == "loss"
    assert data["symptoms"][0]["id"] == "nonfinite-targets", data["symptoms"]
    assert data["fixes"][0]["id"] == "sanitize-inputs"
