"""--verify on the lower-learning-rate fix: a ladder of real patched runs, the largest value
that stays finite and lowers the loss wins, and each run is reported as it goes."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from diagnose.report import Event, Fix, Report, ScriptInfo
from diagnose.verify import verify_fixes
from diagnose.verify_lr import judge_candidate
from diagnose.verify_progress import Progress, terminal_progress

# x scaled by 6: plain SGD is stable only below lr ~ 0.028, so the optimizer's usual 0.1 still
# diverges (to inf within 40 steps) and 0.01 trains.
SCRIPT = """import torch

torch.manual_seed(0)
x = torch.randn(64, 4) * 6
y = x.sum(1, keepdim=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=50.0)
for step in range(200):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def _report(script) -> Report:
    return Report(
        status="nonfinite",
        script=ScriptInfo(
            path=str(script), argv=[], sha256=hashlib.sha256(script.read_bytes()).hexdigest()
        ),
        event=Event(kind="nonfinite", phase="forward", step=3, message="inf"),
        config={"optimizer": "torch.optim.SGD", "lr": 50.0},
        fixes=[Fix(id="lower-learning-rate", score=0.9, title="t", why="", example_patch="")],
    )


@pytest.mark.slow
def test_the_largest_rung_that_trains_is_verified_and_progress_is_told(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    updates: list[Progress] = []
    report = verify_fixes(_report(script), top=1, progress=updates.append)
    fix = report.fixes[0]
    assert fix.verified is True
    assert "lr=0.01" in fix.patch and "verified lr 0.01" in fix.verify_note
    assert "larger values failed: lr 0.1: patched run still produced" in fix.verify_note
    assert [(u.candidate, u.verdict is None) for u in updates] == [
        ("lr 0.1", True),
        ("lr 0.1", False),
        ("lr 0.01", True),
        ("lr 0.01", False),
    ]
    assert updates[1].steps is not None and updates[1].steps < 40  # it blew up early
    assert updates[3].steps == 40  # ran the whole horizon
    assert "its loss fell" in updates[3].line


def test_a_finite_run_whose_loss_did_not_fall_is_not_a_fix():
    data = {"history": [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 1.0}]}
    verdict, works = judge_candidate(True, "patched run stayed finite for 2 steps", data)
    assert not works and "did not fall" in verdict
    _, works = judge_candidate(True, "ok", {"history": [{"step": 0, "loss": 2.0}, {"loss": 1.0}]})
    assert works


def test_progress_is_plain_lines_when_stderr_is_not_a_terminal():
    out = io.StringIO()
    show = terminal_progress(out)
    show(Progress("lower-learning-rate", "lr 0.1", 1, 4))
    show(Progress("lower-learning-rate", "lr 0.1", 1, 4, steps=5, verdict="still \x1b[1mnan"))
    assert out.getvalue().splitlines() == [
        "diagnose: verify lower-learning-rate: lr 0.1 (1/4): running",
        "diagnose: verify lower-learning-rate: lr 0.1 (1/4): still nan, reached step 5",
    ]


def test_progress_redraws_one_line_on_a_terminal():
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as tty:
        show = terminal_progress(tty)
        show(Progress("add-lr-warmup"))
        show(Progress("add-lr-warmup", steps=3, verdict="done"))
    written = ""
    while not written.endswith("\n"):
        written += os.read(leader, 4096).decode()
    os.close(leader)
    assert written.replace("\r\n", "\n") == (
        "\r\x1b[Kdiagnose: verify add-lr-warmup: running"
        "\r\x1b[Kdiagnose: verify add-lr-warmup: done, reached step 3\n"
    )
