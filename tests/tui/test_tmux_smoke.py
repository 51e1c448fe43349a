"""A real terminal: run an example script, open its report in tmux, walk through it, quit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, run_cli

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def _wait_for(session: str, needle: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared on the screen:\n{screen}")


@pytest.fixture
def example_report(tmp_path: Path) -> Path:
    report = tmp_path / "r.json"
    out = run_cli(
        "run", "--format", "json", "--report", str(report), str(EXAMPLES / "fp16_overflow.py")
    )
    assert out.returncode == 1, out.stderr
    return report


def test_walk_through_a_real_report_in_a_real_terminal(example_report: Path, tmp_path: Path):
    session = f"diagnose-{uuid.uuid4().hex[:8]}"
    status = tmp_path / "status"
    command = f"cd {ROOT} && {sys.executable} -m diagnose show {example_report}; echo $? > {status}"
    _tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
    try:
        screen = _wait_for(session, "Step 1 of")
        assert "NON-FINITE" in screen and "Walkthrough" in screen
        titles = []
        for _ in range(8):
            title = next(line for line in screen.splitlines() if "Step " in line and " of " in line)
            titles.append(title.split("·")[1].split("(")[0].strip())
            if "the end" in title:
                break
            _tmux("send-keys", "-t", session, "Space")
            time.sleep(0.3)
            screen = _wait_for(session, f"Step {len(titles) + 1} of")
        assert titles[0] == "Verdict" and titles[-1] == "Next"
        assert "The fix" in titles
        _tmux("send-keys", "-t", session, "2")
        _wait_for(session, "headroom")
        _tmux("send-keys", "-t", session, "q")
        deadline = time.monotonic() + 15
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
