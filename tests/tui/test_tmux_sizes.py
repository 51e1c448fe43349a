"""A real terminal at 80x24 and 200x50: a real run's report, every reference and hint checked
on the screen tmux shows."""

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


def _press(session: str, key: str) -> None:
    """One key, then a pause: an escape followed at once by a key reads as alt+key."""
    _tmux("send-keys", "-t", session, key)
    time.sleep(0.4)


@pytest.fixture(scope="module")
def argv_lr_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Adam at an lr given as --lr=5e3 on the command line: it overflows within two steps."""
    folder = tmp_path_factory.mktemp("argv-lr")
    shutil.copy(EXAMPLES / "argparse_lr_orders_too_high.py", folder / "train.py")
    report = folder / "r.json"
    out = run_cli(
        "run", "--format", "json", "--report", str(report), "train.py", "--lr=5e3", cwd=folder
    )
    assert out.returncode == 1, out.stderr
    return report


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_references_hints_and_config_on_a_real_terminal(
    argv_lr_report: Path, tmp_path: Path, size: tuple[int, int]
):
    session = f"diagnose-{uuid.uuid4().hex[:8]}"
    status = tmp_path / "status"
    command = f"cd {ROOT} && {sys.executable} -m diagnose show {argv_lr_report}; echo $? > {status}"
    _tmux("new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), command)
    try:
        _wait_for(session, "Step 1 of")
        _press(session, "Space")
        screen = _wait_for(session, "Where it was born")
        assert "it is row 9 of 9 (step 1, exp), marked ▶" in " ".join(screen.split())
        _press(session, "2")
        screen = _wait_for(session, "|x| max")
        row = next(line for line in screen.splitlines() if "▶" in line)
        assert row.split()[:4] == ["▶", "9", "1", "-"]
        _press(session, "Enter")
        screen = _wait_for(session, "Op inputs")
        assert "Row 9 of 9" in screen and "The event" in screen
        _press(session, "Escape")
        _press(session, "6")
        screen = _wait_for(session, "lr set at")
        assert "--lr=5e3 on the command line" in screen
        assert "(0.9, 0.999)" in screen
        for raw in ("args_parses", "capture_errors", "[]", "{'"):
            assert raw not in screen
        _press(session, "4")
        screen = _wait_for(session, "Copy example")  # the top fix is an argv change
        assert " Apply " not in screen and "Copy patch" not in screen
        _press(session, "q")
        deadline = time.monotonic() + 15
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
