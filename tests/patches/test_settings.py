"""A setting's fix is given where the run got the value: the command line, a config file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from diagnose.errors import UsageError
from diagnose.patches import make_patch
from diagnose.patches.apply import apply_with_backup
from diagnose.patches.lr_size import lowered_lr
from diagnose.report import Report
from tests.conftest import EXAMPLES, run_cli

SCRIPT = "import torch\nlearning_rate = 0.01\nexec(open('override.py').read())\n"


def _report(script: Path, argv: list[str], origins: dict) -> Report:
    data = script.read_bytes()
    return Report.model_validate(
        {
            "status": "nonfinite",
            "script": {
                "path": str(script),
                "argv": argv,
                "sha256": hashlib.sha256(data).hexdigest(),
            },
            "event": {"kind": "nonfinite", "message": "inf"},
            "config": {"lr": 1000.0, "origins": origins},
            "fixes": [
                {
                    "id": "lower-learning-rate",
                    "score": 1,
                    "title": "t",
                    "why": "w",
                    "example_patch": "",
                }
            ],
        }
    )


def _file_origin(path: Path, line: int = 1, text: str = "1e3") -> dict:
    return {
        "kind": "config-file",
        "file": str(path),
        "line": line,
        "key": "learning_rate",
        "text": text,
        "value": 1000.0,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }


@pytest.fixture
def project(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train.py").write_text(SCRIPT, encoding="utf-8")
    (folder / "override.py").write_text("learning_rate = 1e3\nmax_iters = 5\n", encoding="utf-8")
    monkeypatch.chdir(folder)
    return folder


def test_an_lr_from_an_argv_token_is_fixed_by_the_command_line_with_that_token_changed(project):
    origin = {
        "kind": "argv",
        "index": 1,
        "token": "--learning_rate=1e3",
        "key": "learning_rate",
        "value": 1000.0,
    }
    report = _report(project / "train.py", ["--n=2", "--learning_rate=1e3"], {"lr": origin})
    result = make_patch("lower-learning-rate", project / "train.py", report)
    new = lowered_lr(report, 1000.0)
    assert result.argv == ["--n=2", f"--learning_rate={new:.1f}"]
    assert result.diff is None and "--learning_rate=1e3" in result.note


def test_an_lr_from_a_config_file_is_fixed_by_a_diff_of_that_file(project):
    origin = _file_origin(project / "override.py")
    report = _report(project / "train.py", ["override.py"], {"lr": origin})
    result = make_patch("lower-learning-rate", project / "train.py", report)
    assert result.file == str(project / "override.py")
    assert "-learning_rate = 1e3\n+learning_rate = 100.0\n" in result.diff
    assert "a/override.py" in result.diff and "override.py:1" in result.note


def test_a_config_file_outside_the_working_directory_gets_a_diff_patch_applies_from_root(
    project, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = project / "override.py"
    report = _report(project / "train.py", [str(config)], {"lr": _file_origin(config)})
    result = make_patch("lower-learning-rate", project / "train.py", report)
    name = str(config).lstrip("/")
    assert result.diff.startswith(f"--- a/{name}\n+++ b/{name}\n")
    done = subprocess.run(
        ["git", "apply", "-p1", "-"], input=result.diff, cwd="/", capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert config.read_text() == "learning_rate = 100.0\nmax_iters = 5\n"


def test_an_origin_the_file_no_longer_holds_makes_no_change(project):
    origin = _file_origin(project / "override.py", line=2)
    result = make_patch(
        "lower-learning-rate",
        project / "train.py",
        _report(project / "train.py", [], {"lr": origin}),
    )
    assert result.file is None and result.diff is None
    assert "no longer sets learning_rate" in result.note


def test_apply_writes_the_config_file_the_run_read_and_keeps_a_backup(project):
    config = project / "override.py"
    report = _report(project / "train.py", ["override.py"], {"lr": _file_origin(config)})
    applied = apply_with_backup(report, "lower-learning-rate")
    assert applied.path == config.resolve()
    assert config.read_text().startswith("learning_rate = 100.0\n")
    assert (project / "override.py.diagnose-bak").read_text().startswith("learning_rate = 1e3")
    assert (project / "train.py").read_text() == SCRIPT


def test_apply_of_an_argv_change_writes_nothing_and_returns_the_command(project):
    origin = {"kind": "argv", "index": 0, "token": "--lr=1e3", "key": "lr", "value": 1000.0}
    applied = apply_with_backup(
        _report(project / "train.py", ["--lr=1e3"], {"lr": origin}), "lower-learning-rate"
    )
    assert applied.command == ["--lr=100.0"]
    assert (project / "train.py").read_text() == SCRIPT
    assert sorted(p.name for p in project.iterdir()) == ["override.py", "train.py"]


def _crafted(project: Path, target: Path) -> Report:
    """A report whose origin names ``target`` with the hash and text that would match it."""
    origin = _file_origin(target, line=1, text="1e3")
    return _report(project / "train.py", [], {"lr": origin})


@pytest.mark.parametrize("where", ["etc", "outside", "link-out"])
def test_a_crafted_report_cannot_make_apply_write_a_file_outside_the_project(
    project, tmp_path, where
):
    outside = tmp_path / "outside.yaml"
    outside.write_text("learning_rate: 1e3\n", encoding="utf-8")
    if where == "etc":
        target = Path("/etc/passwd")
        report = _report(
            project / "train.py", [], {"lr": {**_file_origin(outside), "file": "/etc/passwd"}}
        )
    elif where == "outside":
        target, report = outside, _crafted(project, outside)
    else:
        os.symlink(outside, project / "inside.yaml")
        target = outside
        report = _crafted(project, outside)
        report.config.origins["lr"].file = str(project / "inside.yaml")
    before = target.read_bytes()
    with pytest.raises(UsageError, match=r"not under the script's folder|no patch"):
        apply_with_backup(report, "lower-learning-rate", force=True)
    assert target.read_bytes() == before


def test_the_advised_command_run_again_trains_with_the_lowered_lr(tmp_path):
    shutil.copytree(EXAMPLES / "configs", tmp_path / "configs")
    shutil.copy(EXAMPLES / "configurator_high_lr.py", tmp_path)
    first = tmp_path / "first.json"
    run_cli("--report", str(first), "configurator_high_lr.py", "--learning_rate=3.0", cwd=tmp_path)
    report = json.loads(first.read_text())
    assert report["config"]["origins"]["lr"]["token"] == "--learning_rate=3.0"
    fix = next(f for f in report["fixes"] if f["id"] == "lower-learning-rate")
    assert fix["patch_argv"] == ["--learning_rate=0.3"]
    again = tmp_path / "again.json"
    run_cli(
        "--report",
        str(again),
        "--max-steps",
        "3",
        "configurator_high_lr.py",
        *fix["patch_argv"],
        cwd=tmp_path,
    )
    assert json.loads(again.read_text())["config"]["lr"] == pytest.approx(0.3)


def test_the_advised_config_diff_applied_changes_the_lr_the_run_uses(tmp_path):
    shutil.copytree(EXAMPLES / "configs", tmp_path / "configs")
    shutil.copy(EXAMPLES / "configurator_high_lr.py", tmp_path)
    first = tmp_path / "first.json"
    run_cli("--report", str(first), "configurator_high_lr.py", cwd=tmp_path)
    report = json.loads(first.read_text())
    origin = report["config"]["origins"]["lr"]
    assert (Path(origin["file"]).name, origin["line"]) == ("configurator_sgd.py", 2)
    done = run_cli("apply", str(first), "lower-learning-rate", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "learning_rate = 0.2" in (tmp_path / "configs" / "configurator_sgd.py").read_text()
    again = tmp_path / "again.json"
    run_cli("--report", str(again), "--max-steps", "3", "configurator_high_lr.py", cwd=tmp_path)
    assert json.loads(again.read_text())["config"]["lr"] == pytest.approx(0.2)
