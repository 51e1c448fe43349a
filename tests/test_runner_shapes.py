"""A healthy script of any shape runs under diagnose exactly as under python.

Each script is run twice in a subprocess, by ``python`` and by ``diagnose``, from the same
folder and seed; the ``result`` lines it prints (losses, final weights bit for bit, what its
own code read) must be the same, and the run must end as the plain one did, with one report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.report import Report
from tests.conftest import ROOT

SHAPES = ROOT / "tests" / "scripts" / "shapes"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
    )


def _results(out: str) -> list[str]:
    return sorted(line for line in out.splitlines() if line.startswith("result"))


def _both(tmp_path: Path, name: str) -> tuple[subprocess.CompletedProcess, ...]:
    """The plain run, the diagnosed run, in two copies of the script's folder."""
    runs = []
    for how in ("plain", "diagnosed"):
        folder = tmp_path / how
        folder.mkdir()
        shutil.copy(SHAPES / name, folder / "train.py")
        (folder / "beside.txt").write_text("read beside the script\n")
        if how == "plain":
            cmd = [sys.executable, "train.py"]
        else:
            cmd = [sys.executable, "-m", "diagnose", "--format", "text"]
            cmd += ["--report", str(folder / "r.json"), "train.py"]
        runs.append(_run(cmd, folder))
    return tuple(runs)


@pytest.mark.parametrize("name", ["func.py", "sparse.py", "complex.py", "chdir.py", "modes.py"])
def test_a_healthy_script_of_this_shape_prints_what_it_prints_under_python(tmp_path, name):
    plain, diagnosed = _both(tmp_path, name)
    assert plain.returncode == 0, plain.stderr
    assert _results(plain.stdout), plain.stdout
    assert _results(diagnosed.stdout) == _results(plain.stdout), diagnosed.stderr
    assert diagnosed.returncode == 0, diagnosed.stdout + diagnosed.stderr
    report = Report.load(tmp_path / "diagnosed" / "r.json")
    assert report.status == "clean"
    assert not [w for w in report.warnings if w.startswith("tracer:")], report.warnings
    assert report.unwatched_steps is None
    assert report.steps_recorded > 0


def test_two_threads_training_train_as_under_python_and_the_report_says_one_was_watched(
    tmp_path,
):
    plain, diagnosed = _both(tmp_path, "threads.py")
    assert plain.returncode == 0, plain.stderr
    assert len(_results(plain.stdout)) == 2
    assert _results(diagnosed.stdout) == _results(plain.stdout), diagnosed.stderr
    assert "Traceback" not in diagnosed.stderr
    assert diagnosed.returncode == 0, diagnosed.stdout + diagnosed.stderr
    report = Report.load(tmp_path / "diagnosed" / "r.json")
    assert report.steps_recorded == 40  # the one thread it watched, every step of it
    assert report.unwatched_steps == 40  # the other's, counted and said
    (note,) = [w for w in report.warnings if "went unchecked" in w]
    assert "40 optimizer steps in 1 other thread" in note
    assert not report.symptoms, report.symptoms  # no finding from interleaved threads
    assert "40 more went unchecked" in diagnosed.stdout


def test_forked_children_run_as_under_python_and_only_the_parent_reports(tmp_path):
    plain, diagnosed = _both(tmp_path, "forks.py")
    assert plain.returncode == 0, plain.stderr
    assert len(_results(plain.stdout)) == 3
    assert _results(diagnosed.stdout) == _results(plain.stdout), diagnosed.stderr
    assert "Traceback" not in diagnosed.stderr
    assert diagnosed.returncode == 0, diagnosed.stdout + diagnosed.stderr
    assert diagnosed.stdout.count("diagnose: train.py:") == 1, diagnosed.stdout
    assert diagnosed.stderr.count("report written to") == 1, diagnosed.stderr
    assert Report.load(tmp_path / "diagnosed" / "r.json").steps_recorded == 3


def test_an_event_in_a_training_thread_stops_that_thread_quietly_and_is_the_verdict(tmp_path):
    plain, diagnosed = _both(tmp_path, "thread_nan.py")
    assert plain.returncode == 0, plain.stderr
    assert diagnosed.returncode == 1, diagnosed.stdout + diagnosed.stderr
    assert "main goes on" in diagnosed.stdout
    assert "Traceback" not in diagnosed.stderr
    assert "Exception in thread" not in diagnosed.stderr
    report = Report.load(tmp_path / "diagnosed" / "r.json")
    assert report.status == "nonfinite"
    assert report.event.step == 5 and report.event.phase == "input"
