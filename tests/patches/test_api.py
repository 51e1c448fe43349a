"""attach_patches fills every fix; apply_patch writes one, keeps a backup, refuses stale reports
and scripts outside the report's and the current folder."""

from __future__ import annotations

import hashlib

import pytest

from diagnose.errors import UsageError
from diagnose.patches import apply_patch, attach_patches, make_patch
from diagnose.report import Fix
from tests.patches.helpers import report_for

SOURCE = """import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=5.0)  # too high
for step in range(3):
    loss = model(torch.ones(2, 4)).sum()
    loss.backward()
    opt.step()
"""


def _fix(fix_id: str) -> Fix:
    return Fix(id=fix_id, score=0.5, title=fix_id, why="because", example_patch="# example")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    return path


@pytest.fixture
def report(script):
    report = report_for(script)
    report.script.sha256 = hashlib.sha256(SOURCE.encode()).hexdigest()
    report.fixes = [
        _fix("lower-learning-rate"),
        _fix("add-lr-warmup"),
        _fix("use-bf16"),
        _fix("a-fix-from-a-users-rule"),
    ]
    return attach_patches(report, script)


def test_attach_fills_patch_or_note_for_every_fix(report):
    lr, warmup, bf16, custom = report.fixes
    assert lr.patch.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+opt = torch.optim.SGD(model.parameters(), lr=0.5)  # too high\n" in lr.patch
    assert lr.patch_note == "lr 5 -> 0.5 in the optimizer call"
    assert "+    warmup.step()\n" in warmup.patch
    assert warmup.patch_note == "the lr ramps up linearly over the first 100 steps"
    assert bf16.patch is None and "no float16 in the script" in bf16.patch_note
    assert custom.patch is None and custom.patch_note.startswith("no automatic patch")
    assert all(f.example_patch == "# example" for f in report.fixes)  # kept for every fix


def test_apply_writes_the_patch_and_keeps_a_backup(report, script):
    written = apply_patch(report, "lower-learning-rate", report_dir=script.parent)
    assert written == script
    assert "lr=0.5" in script.read_text()
    assert (script.parent / "train.py.diagnose-bak").read_text() == SOURCE
    assert make_patch("lower-learning-rate", script, report).new_source == (
        SOURCE.replace("lr=5.0", "lr=0.05")
    )  # applied for real: the next patch goes further


def test_apply_refuses_a_script_changed_since_the_report(report, script):
    script.write_text(SOURCE + "# edited\n")
    with pytest.raises(UsageError, match="changed since the report was made"):
        apply_patch(report, "lower-learning-rate", report_dir=script.parent)
    assert script.read_text() == SOURCE + "# edited\n"


def test_apply_without_backup_and_second_backup_name(report, script):
    apply_patch(report, "lower-learning-rate", backup=False, report_dir=script.parent)
    assert not (script.parent / "train.py.diagnose-bak").exists()
    (script.parent / "train.py.diagnose-bak").write_text("older")
    script.write_text(SOURCE)
    apply_patch(report, "lower-learning-rate", report_dir=script.parent)
    assert (script.parent / "train.py.diagnose-bak").read_text() == "older"
    assert (script.parent / "train.py.diagnose-bak.1").read_text() == SOURCE


def test_apply_refuses_unknown_fixes_and_fixes_without_patch(report, script):
    with pytest.raises(UsageError, match=r"no fix 'nope' .*lower-learning-rate, add-lr-warmup"):
        apply_patch(report, "nope")
    with pytest.raises(
        UsageError,
        match=r"use-bf16: no patch to apply \(no automatic patch: "
        r"no float16 in the script",
    ):
        apply_patch(report, "use-bf16", report_dir=script.parent)


def test_unreadable_script_gets_a_note(tmp_path):
    missing = tmp_path / "gone.py"
    result = make_patch("use-bf16", missing, report_for(missing))
    assert result.diff is None and result.note.startswith(f"cannot read {missing}")


def test_apply_refuses_a_script_outside_the_report_and_current_folder(report, script):
    """A report not known to come from the script's folder (no ``report_dir``) may not patch a
    file elsewhere; naming the script yourself (``script_path``) or ``force`` may."""
    with pytest.raises(UsageError, match="outside the current folder"):
        apply_patch(report, "lower-learning-rate")
    assert script.read_text() == SOURCE
    assert apply_patch(report, "lower-learning-rate", script_path=script) == script
    assert "lr=0.5" in script.read_text()
