"""``--verify`` stopped by SIGTERM or SIGHUP: the patched re-run under way ends with it, its
temporary folder is removed, and what the run saw is kept and shown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from diagnose.report import Report
from tests.conftest import ROOT

# A patched copy (the one not in the test's folder) says it started and waits to be stopped.
WAIT_WHEN_COPIED = """
import os, sys, time
if os.path.dirname(os.path.abspath(__file__)) != os.environ["ORIGINAL_FOLDER"]:
    with open(os.environ["COPY_PID"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
"""


def _verify_folders(temp) -> list[str]:
    return [p.name for p in temp.iterdir() if p.name.startswith("diagnose-verify-")]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_during_verification_ends_the_re_run_and_removes_its_folder(
    tmp_path, signum, status
):
    source = (ROOT / "examples" / "fp16_overflow.py").read_text()
    (tmp_path / "train.py").write_text(WAIT_WHEN_COPIED + source)
    temp = tmp_path / "tmp"
    temp.mkdir()
    marker = tmp_path / "copy.pid"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "NO_COLOR": "1",
        "TMPDIR": str(temp),
        "ORIGINAL_FOLDER": str(tmp_path),
        "COPY_PID": str(marker),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "diagnose", "--verify", "--report", "r.json", "train.py"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.time() + 240
        while not (marker.exists() and marker.read_text()) and proc.poll() is None:
            assert time.time() < deadline, "the patched re-run never started"
            time.sleep(0.05)
        copy = int(marker.read_text())
        assert _verify_folders(temp), "the re-run's temporary folder"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == status, err
    assert _gone(copy), "the patched re-run outlived the verification"
    assert _verify_folders(temp) == []
    report = Report.load(tmp_path / "r.json")
    assert report.status == "nonfinite"
    assert any(
        f"analysis interrupted ({signal.Signals(signum).name})" in w for w in report.warnings
    )
    assert "first non-finite" in out
