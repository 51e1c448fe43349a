"""--verify on the lower-learning-rate fix: a ladder of real patched runs, the largest value
that stays finite and lowers the loss wins, and each run is reported as it goes."""

from __future__ import annotations

import hashlib
import io
import itertools
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
    ticks = [u for u in updates if u.tick]
    updates = [u for u in updates if not u.tick]
    assert [(u.candidate, u.verdict is None) for u in updates] == [
        ("lr 0.1", True),
        ("lr 0.1", False),
        ("lr 0.01", True),
        ("lr 0.01", False),
    ]
    assert updates[1].steps is not None and updates[1].steps < 40  # it blew up early
    assert updates[3].steps == 40  # ran the whole horizon
    assert "its loss fell" in updates[3].line
    assert updates[0].line == "verify lower-learning-rate: lr 0.1 (1/4): running up to 40 steps"
    assert ", reached step 40 of 40 in " in updates[3].line
    assert all(t.verdict is None and t.elapsed is not None for t in ticks)
    pairs = itertools.pairwise(ticks)
    assert all(a.elapsed < b.elapsed for a, b in pairs if a.candidate == b.candidate)


def test_a_finite_run_whose_loss_did_not_fall_is_not_a_fix():
    data = {"history": [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 1.0}]}
    verdict, works = judge_candidate(True, "patched run stayed finite for 2 steps", data)
    assert not works and "did not fall" in verdict
    _, works = judge_candidate(True, "ok", {"history": [{"step": 0, "loss": 2.0}, {"loss": 1.0}]})
    assert works
    said = "patched run stayed finite for 2 steps; its loss fell from 2 to 1"
    assert judge_candidate(True, said, data) == (said, True)  # the run's own verdict stands


def test_the_largest_value_tried_that_works_is_said_only_when_larger_ones_were_tried():
    from diagnose.verify_lr import _summary

    assert _summary("lr 0.1", "its loss fell", []) == "verified lr 0.1: its loss fell"
    assert _summary("lr 0.01", "its loss fell", ["lr 0.1: still nan"]) == (
        "verified lr 0.01, the largest value tried that works: its loss fell; larger values "
        "failed: lr 0.1: still nan"
    )


def test_a_running_line_says_the_budget_and_the_time_and_an_ended_one_of_how_many():
    running = Progress("use-bf16", of_steps=40, elapsed=12.34, tick=True)
    assert running.line == "verify use-bf16: running up to 40 steps, 12 s so far"
    done = Progress("use-bf16", steps=17, verdict="still nan", of_steps=40, elapsed=75.0)
    assert done.line == "verify use-bf16: still nan, reached step 17 of 40 in 1 min 15 s"


def test_ticks_are_redrawn_on_a_terminal_and_left_out_of_a_log():
    out = io.StringIO()
    show = terminal_progress(out)
    show(Progress("use-bf16", of_steps=40))
    show(Progress("use-bf16", of_steps=40, elapsed=1.0, tick=True))
    show(Progress("use-bf16", of_steps=40, steps=40, verdict="ok", elapsed=2.0))
    assert out.getvalue().splitlines() == [
        "diagnose: verify use-bf16: running up to 40 steps",
        "diagnose: verify use-bf16: ok, reached step 40 of 40 in 2.0 s",
    ]


def test_run_ticking_ticks_while_a_real_process_runs_and_kills_it_at_the_timeout():
    import subprocess
    import sys

    from diagnose.verify_progress import run_ticking

    seen: list[float] = []
    done = run_ticking(
        [sys.executable, "-c", "import time; time.sleep(2.5); print('ok')"], 60, seen.append
    )
    assert done.returncode == 0 and done.stdout == "ok\n"
    assert len(seen) >= 2 and seen == sorted(seen)
    with pytest.raises(subprocess.TimeoutExpired):
        run_ticking([sys.executable, "-c", "import time; time.sleep(60)"], 1.5, None)


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
