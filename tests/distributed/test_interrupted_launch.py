"""A ``diagnose --nproc 2`` launch stopped by Ctrl-C or SIGTERM: torchrun passes the signal
to the ranks, each writes what it saw, and the one report says the run was interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from diagnose.report import Report
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

WAITING = textwrap.dedent("""
    import time
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(100_000):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
        if step == 3 and dist.get_rank() == 0:
            print("ready", flush=True)
        time.sleep(0.02)
""")


@pytest.mark.parametrize(
    "signum, status",
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
def test_a_launch_stopped_by_a_signal_reports_what_the_ranks_saw(tmp_path, signum, status):
    (tmp_path / "train.py").write_text(WAITING)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "diagnose", "--nproc", "2", "--report", "r.json", "train.py"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == "ready":
                break
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == status, err[-3000:]
    report = Report.load(tmp_path / "r.json")
    assert report.status == "interrupted" and report.event is None
    assert report.interruption.cause == signal.Signals(signum).name
    assert report.interruption.stopped_at_step >= 3
    assert report.history and report.frames and report.config.optimizer
    assert [r.rank for r in report.ranks] == [0, 1]
    assert "interrupted at step" in out
