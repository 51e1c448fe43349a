"""A tensor saved for backward and then changed in place: the failing step is replayed with
anomaly mode, and the report names the op that saved it, the op that changed it, and a patch
that writes the change out of place."""

from __future__ import annotations

import textwrap

import pytest

from diagnose.patches import make_patch
from diagnose.runner import diagnose_script

TWO_LAYERS = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 1)

    def forward(self, x):
        h = torch.sigmoid(self.a(x))
        {change}
        return self.b(h)

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x = torch.randn(16, 4)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _run(tmp_path, source: str):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    return script, diagnose_script(script)


@pytest.mark.parametrize(
    "change, patched",
    [("h += 1", "h = h + 1"), ("h *= 2", "h = h * 2"), ("h.relu_()", "h = h.relu()")],
)
def test_the_saving_op_and_the_in_place_op_are_named_and_patched(tmp_path, change, patched):
    script, report = _run(tmp_path, TWO_LAYERS.format(change=change))
    crash = report.event.crash
    assert report.event.location.line == 22  # where Python raised: loss.backward()
    assert crash.family == "inplace-modified-saved-tensor"
    assert [(s.role, s.line) for s in crash.sites] == [("saved", 12), ("modified", 13)]
    assert "SigmoidBackward0" in crash.sites[0].what
    assert report.fixes[0].id == "make-op-out-of-place"
    diff = make_patch("make-op-out-of-place", script, report).diff
    assert f"-        {change}\n+        {patched}\n" in diff


def test_an_inplace_relu_module_gets_its_flag_turned_off(tmp_path):
    source = """
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid(), nn.ReLU(inplace=True), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(16, 4)
    loss = model(x).pow(2).mean()
    loss.backward()
    """
    script, report = _run(tmp_path, source)
    crash = report.event.crash
    assert (crash.module, crash.module_type) == ("2", "ReLU")
    assert ("built", 5) in [(s.role, s.line) for s in crash.sites]
    diff = make_patch("make-op-out-of-place", script, report).diff
    assert "nn.ReLU(inplace=False)" in diff and diff.count("\n-") == 1


def test_an_indexed_write_is_named_and_left_unpatched(tmp_path):
    script, report = _run(tmp_path, TWO_LAYERS.format(change="h[:, 0] = 0"))
    crash = report.event.crash
    assert ("modified", 13) in [(s.role, s.line) for s in crash.sites]
    assert crash.edit is None and any("clone" in line for line in crash.checked)
    assert make_patch("make-op-out-of-place", script, report).diff is None
