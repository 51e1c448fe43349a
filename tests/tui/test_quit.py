"""Quitting the UI after a run gives the shell back at once, with the report's place said
last (a real terminal through tmux)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

QUIT_WITHIN = 2.0  # seconds from `q` to the shell; the interpreter's teardown alone took ~3


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True).stdout


def _screen(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session)


def _wait(session: str, needle: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = _screen(session)
        if needle in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} never appeared on the screen:\n{_screen(session)}")


def test_q_after_a_run_returns_to_the_shell_at_once(tmp_path: Path):
    session = f"diagnose-{uuid.uuid4().hex[:8]}"
    reports = tmp_path / "reports"
    ended = tmp_path / "ended"
    command = (
        f"cd {ROOT} && DIAGNOSE_REPORT_DIR={reports} {sys.executable} -m diagnose "
        f"{EXAMPLES / 'fp16_overflow.py'}; echo status $? > {ended}; sleep 60"
    )
    _tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "32", command)
    try:
        _wait(session, "Step 1 of", timeout=120)
        kept = next(reports.glob("*.json"))
        _wait(session, f"report  {kept.name} in ", timeout=10)  # the verdict says where it is
        time.sleep(0.5)
        pressed = time.monotonic()
        _tmux("send-keys", "-t", session, "q")
        while not ended.exists() and time.monotonic() - pressed < 30:
            time.sleep(0.02)
        took = time.monotonic() - pressed
        assert ended.read_text().strip() == "status 1"
        assert took < QUIT_WITHIN, f"the shell came back {took:.1f}s after q"
        after = "".join(_tmux("capture-pane", "-p", "-J", "-t", session).split("\n"))
        assert after.rstrip().endswith(
            f"diagnose: report kept in {kept} (`diagnose show` opens the newest)"
        )
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
