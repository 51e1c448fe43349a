"""A layer built for another size than it gets: the run names the layer, its sizes, the input's
shape, the call upstream that made that size, and the constructor number that fits."""

from __future__ import annotations

import textwrap

from diagnose.patches import make_patch
from diagnose.runner import diagnose_script

CONV_NET = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear({head}, 4)

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), -1)
        return self.head(x)

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    x = torch.randn(2, 3, 32, 32)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _run(tmp_path, source: str):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    return script, diagnose_script(script)


def test_a_linear_head_of_the_wrong_size_is_named_with_the_pooling_that_made_its_input(tmp_path):
    script, report = _run(tmp_path, CONV_NET.format(head="6 * 16 * 16"))
    crash = report.event.crash
    assert crash.family == "shape-mismatch"
    assert (crash.module, crash.module_type) == ("head", "Linear")
    assert crash.sizes == {"in_features": 1536, "out_features": 4}
    assert crash.input_shape == [2, 1176] and (crash.expected, crash.got) == (1536, 1176)
    assert any(
        "`features.2` (MaxPool2d)" in line and "6 * 14 * 14 = 1176" in line
        for line in crash.evidence
    )
    assert [(s.role, s.line) for s in crash.sites] == [("built", 9)]
    assert [loc.line for loc in crash.chain] == [20, 14]
    assert report.fixes[0].id == "fix-layer-size"
    patch = make_patch("fix-layer-size", script, report)
    assert "-        self.head = nn.Linear(6 * 16 * 16, 4)" in patch.diff
    assert "+        self.head = nn.Linear(6 * 14 * 14, 4)" in patch.diff


def test_a_size_given_by_a_name_is_explained_and_not_patched(tmp_path):
    source = CONV_NET.format(head="HEAD").replace(
        "import torch\n", "import torch\nHEAD = 1000\n", 1
    )
    script, report = _run(tmp_path, source)
    crash = report.event.crash
    assert crash.module == "head" and crash.edit is None
    assert any("not a plain number" in line for line in crash.checked)
    assert any("nn.LazyLinear" in line for line in crash.evidence)
    assert make_patch("fix-layer-size", script, report).diff is None


def test_a_conv_given_the_wrong_channels_gets_in_channels_from_the_layer_before(tmp_path):
    source = CONV_NET.format(head="6 * 14 * 14").replace(
        "nn.MaxPool2d(2))", "nn.MaxPool2d(2), nn.Conv2d(8, 6, 1))"
    )
    script, report = _run(tmp_path, source)
    crash = report.event.crash
    assert (crash.module, crash.module_type) == ("features.3", "Conv2d")
    assert (crash.expected, crash.got) == (8, 6)
    assert crash.edit.target == "in_channels" and crash.edit.value == "6"
    assert "nn.Conv2d(6, 6, 1)" in make_patch("fix-layer-size", script, report).diff


def test_a_view_to_a_size_that_does_not_divide_names_the_tensor_and_its_producer(tmp_path):
    source = CONV_NET.format(head="6 * 14 * 14").replace(
        "x.view(x.size(0), -1)", "x.view(-1, 1000)"
    )
    _, report = _run(tmp_path, source)
    crash = report.event.crash
    assert crash.family == "shape-mismatch" and crash.input_shape == [2, 6, 14, 14]
    assert any("line 13" in line and "1176 per sample" in line for line in crash.evidence)
    assert any("`features.2` (MaxPool2d)" in line for line in crash.evidence)
    assert report.fixes[0].id == "fix-layer-size" and report.fixes[0].patch is None


def test_a_regression_head_with_another_output_size_than_the_target_gets_out_features(tmp_path):
    source = """
    import torch
    from torch import nn
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x, y = torch.randn(6, 4), torch.randn(6, 2)
    loss = nn.functional.mse_loss(net(x), y)
    loss.backward()
    """
    script, report = _run(tmp_path, source)
    crash = report.event.crash
    assert (crash.module, crash.expected, crash.got) == ("2", 2, 3)
    assert (crash.edit.target, crash.edit.value, crash.edit.line) == ("out_features", "2", 4)
    assert "nn.Linear(8, 2))" in make_patch("fix-layer-size", script, report).diff
