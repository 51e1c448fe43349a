"""A script's own signal handling is as under python, and diagnose still writes its report:
a SIGTERM handler that saves a checkpoint and chains to the handler it replaced reaches what
was there before diagnose (the default), not diagnose's own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from diagnose.report import Report
from tests.conftest import ROOT

GRACEFUL = textwrap.dedent("""
    import signal, sys, time
    import torch

    previous = signal.getsignal(signal.SIGTERM)
    print("previous", repr(previous), flush=True)

    def stop(signum, frame):
        torch.save(model.state_dict(), "checkpoint.pt")
        if callable(previous):
            previous(signum, frame)
        sys.exit(0)

    assert signal.signal(signal.SIGTERM, stop) == previous
    assert signal.getsignal(signal.SIGTERM) is stop
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(100_000):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
        if step == 3:
            print("ready", flush=True)
        time.sleep(0.01)
""")


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    return subprocess.Popen(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _stop_when_ready(proc: subprocess.Popen) -> tuple[list[str], str, str]:
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line.strip())
        if line.strip() == "ready":
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    return seen, out, err


def test_a_graceful_sigterm_handler_of_the_script_saves_and_exits_as_under_python(tmp_path):
    outcomes = {}
    for how in ("plain", "diagnosed"):
        folder = tmp_path / how
        folder.mkdir()
        (folder / "train.py").write_text(GRACEFUL)
        cmd = [sys.executable, "train.py"]
        if how == "diagnosed":
            cmd = [sys.executable, "-m", "diagnose", "--format", "text", "--report", "r.json"]
            cmd.append("train.py")
        proc = _start(cmd, folder)
        seen, _out, err = _stop_when_ready(proc)
        outcomes[how] = (proc.returncode, seen[0], (folder / "checkpoint.pt").exists())
        assert "Traceback" not in err, err
    assert outcomes["diagnosed"] == outcomes["plain"] == (0, "previous <Handlers.SIG_DFL: 0>", True)
    report = Report.load(tmp_path / "diagnosed" / "r.json")
    assert report.status == "clean"  # the script's own graceful stop, after the steps it took
    assert report.steps_recorded >= 3
