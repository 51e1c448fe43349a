"""`diagnose apply REPORT.json FIX_ID`: writes the fix into the script, keeps a backup."""

from __future__ import annotations

import hashlib

import pytest

from diagnose.report import Event, Fix, Report, ScriptInfo
from tests.conftest import run_cli

SOURCE = """import torch

model = torch.nn.Linear(3, 1).half()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
"""


@pytest.fixture
def saved(tmp_path):
    """A script and a report made from it, saved beside it with a relative script path."""
    script = tmp_path / "train.py"
    script.write_text(SOURCE)
    report = Report(
        status="nonfinite",
        script=ScriptInfo(path="train.py", sha256=hashlib.sha256(SOURCE.encode()).hexdigest()),
        event=Event(kind="nonfinite", phase="forward", message="inf", dtype="float16"),
        fixes=[Fix(id=i, score=0.5, title=i, why="", example_patch="")
               for i in ("use-bf16", "add-lr-warmup")],
    )
    path = tmp_path / "report.json"
    report.write(path)
    return script, path


def test_apply_writes_the_patch_and_a_backup(saved, tmp_path):
    script, report = saved
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "applied use-bf16 to train.py (original kept as train.py.diagnose-bak)")
    assert ".bfloat16()" in script.read_text()
    assert (tmp_path / "train.py.diagnose-bak").read_text() == SOURCE


def test_report_found_from_another_folder(saved, tmp_path):
    script, report = saved
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("apply", str(report), "use-bf16", "--no-backup", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert ".bfloat16()" in script.read_text()
    assert not (tmp_path / "train.py.diagnose-bak").exists()


def test_dry_run_prints_the_diff_and_writes_nothing(saved, tmp_path):
    script, report = saved
    result = run_cli("apply", "--dry-run", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["--- a/train.py", "+++ b/train.py"]
    assert "+model = torch.nn.Linear(3, 1).bfloat16()" in result.stdout.splitlines()
    assert script.read_text() == SOURCE


def test_changed_script_is_refused(saved, tmp_path):
    script, report = saved
    script.write_text(SOURCE + "print('edited')\n")
    result = run_cli("apply", str(report), "use-bf16", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "diagnose: error: train.py: changed since the report was made; run diagnose again")
    assert script.read_text() == SOURCE + "print('edited')\n"


def test_bad_input_gets_one_line(saved, tmp_path):
    _, report = saved
    cases = [
        (["apply", str(report), "nope"],
         "diagnose: error: the report has no fix 'nope' (its fixes: use-bf16, add-lr-warmup)"),
        (["apply", str(report), "add-lr-warmup"],
         "diagnose: error: add-lr-warmup: no patch to apply (no automatic patch: expected one "
         "`opt.step()` statement)"),
        (["apply", str(tmp_path / "missing.json"), "use-bf16"],
         f"diagnose: error: {tmp_path / 'missing.json'}: no such report file"),
    ]
    for args, line in cases:
        result = run_cli(*args, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.strip() == line
