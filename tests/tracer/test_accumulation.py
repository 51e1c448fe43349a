"""A reducing op's fp16 overflow is judged from what it accumulates, not from its inputs.

Inputs of a few hundred are far inside float16's range (headroom above 100x), yet a matmul,
an einsum, a linear or a convolution sums K products of them into each value and passes
65504. Each script below trains under CPU float16 autocast; the report names the op and its
line inside the module's ``forward``, recomputes the op in float64 (the cross-check and the
accumulated magnitude), fires fp16-overflow from that, and ranks the fixes by the evidence:
a scale before the product first for attention scores, bfloat16 first for the others.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from diagnose.runner import diagnose_script

LOOP = """
torch.manual_seed(0)
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=1e-4)


def train(steps):
    for _ in range(steps):
        x = torch.randn(2, 8, 64) * SCALE
        with torch.autocast("cpu", dtype=torch.float16):
            loss = net(x).float().pow(2).mean()  # LOOP-CALL
        opt.zero_grad()
        loss.backward()
        opt.step()


train(3)
"""

HEAD = """
import math

import torch
from torch import nn
"""

# name -> (the model's code, input scale, op, line marker, attention, scaled after)
CASES = {
    "unscaled @": (
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(64, 192)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, -1)
                scores = q @ k.transpose(-2, -1)  # MARK
                return scores.softmax(-1) @ v
        """,
        200.0,
        "matmul",
        True,
        False,
    ),
    "matmul scaled after": (
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(64, 192)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, -1)
                scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # MARK
                return torch.softmax(scores, dim=-1) @ v
        """,
        250.0,
        "matmul",
        True,
        True,
    ),
    "einsum scores": (
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.q, self.k = nn.Linear(64, 64), nn.Linear(64, 64)

            def forward(self, x):
                scores = torch.einsum("bqd,bkd->bqk", self.q(x), self.k(x))  # MARK
                return scores.softmax(-1).sum(-1)
        """,
        200.0,
        "einsum",
        True,
        False,
    ),
    "wide linear": (
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.wide = nn.Linear(64, 2048)
                self.out = nn.Linear(2048, 1)
                with torch.no_grad():
                    self.out.weight.fill_(0.5)

            def forward(self, x):
                h = torch.relu(self.wide(x)).clamp(max=150) * 0 + 150
                return self.out(h)  # MARK
        """,
        1.0,
        "linear",
        False,
        False,
    ),
}


def _script(tmp_path: Path, model: str, scale: float) -> Path:
    path = tmp_path / "train.py"
    source = HEAD + textwrap.dedent(model) + f"\nSCALE = {scale}\n" + LOOP
    path.write_text(source)
    return path


def _line(path: Path, marker: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if marker in t)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_accumulated_magnitude_decides_the_fp16_overflow(tmp_path, case):
    model, scale, op, attention, scaled_after = CASES[case]
    path = _script(tmp_path, model, scale)
    report = diagnose_script(path, [])
    event = report.event
    assert report.status == "nonfinite" and event is not None
    assert (event.phase, event.step, event.op) == ("forward", 0, op)
    assert event.location is not None
    assert (Path(event.location.file), event.location.line) == (path, _line(path, "# MARK"))
    chain = [f.line for f in event.call_chain or []]
    assert chain[0] == _line(path, "LOOP-CALL") and chain[-1] == _line(path, "# MARK")

    acc = event.accumulation
    assert acc is not None and acc.op == op and acc.compute_dtype == "float16"
    assert acc.max_abs is not None and acc.max_abs > acc.dtype_max  # it accumulated past 65504
    assert (acc.attention, acc.scaled_after) == (attention, scaled_after)
    largest_input = max(v.max_abs for v in event.op_input_values or [])
    assert largest_input < acc.dtype_max / 100  # the inputs had headroom to spare
    assert acc.terms is None or acc.bound is None or acc.bound >= acc.max_abs

    check = event.cross_check
    assert check is not None and check.method == "float64 replay of the op" and check.agreed

    symptoms = {s.id: s for s in report.symptoms}
    assert "fp16-overflow" in symptoms and symptoms["fp16-overflow"].confidence >= 0.9
    assert any("accumulates" in line for line in symptoms["fp16-overflow"].evidence)
    fixes = [f.id for f in report.fixes]
    expected_first = "scale-before-product" if attention else "use-bf16"
    assert fixes[0] == expected_first, fixes
    assert {"use-bf16", "upcast-to-fp32", "scale-before-product"} <= set(fixes)


def test_the_patch_adds_the_scale_to_unscaled_attention_scores(tmp_path):
    model, scale, *_ = CASES["unscaled @"]
    report = diagnose_script(_script(tmp_path, model, scale), [])
    fix = next(f for f in report.fixes if f.id == "scale-before-product")
    assert fix.patch is not None
    assert "-        scores = q @ k.transpose(-2, -1)  # MARK" in fix.patch
    assert "+        scores = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # MARK" in fix.patch


def test_the_patch_moves_a_scale_applied_after_the_product_onto_its_operand(tmp_path):
    model, scale, *_ = CASES["matmul scaled after"]
    report = diagnose_script(_script(tmp_path, model, scale), [])
    fix = next(f for f in report.fixes if f.id == "scale-before-product")
    assert fix.patch is not None
    assert (
        "+        scores = torch.matmul((q / math.sqrt(q.shape[-1])), k.transpose(-2, -1))"
        in fix.patch
    )


def test_no_scale_is_invented_for_a_product_that_is_not_attention(tmp_path):
    model, scale, *_ = CASES["wide linear"]
    report = diagnose_script(_script(tmp_path, model, scale), [])
    fix = next(f for f in report.fixes if f.id == "scale-before-product")
    assert fix.patch is None and fix.patch_note


def test_a_product_in_range_gets_no_accumulation_symptom(tmp_path):
    """The same attention at inputs of 5: the scores stay finite, the run is clean."""
    model, *_ = CASES["unscaled @"]
    report = diagnose_script(_script(tmp_path, model, 5.0), [])
    assert report.event is None
    assert "fp16-overflow" not in {s.id for s in report.symptoms}
