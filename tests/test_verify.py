"""--verify: patched copies of the script re-run under diagnose; fixes that work rank first."""

from __future__ import annotations

import hashlib

import pytest

from diagnose.report import Event, Fix, Report, ScriptInfo
from diagnose.verify import _judge, rank_verified, run_patched, steps_to_run, verify_fixes

# Diverges with lr=0.5 (stable below 2 / 18: the loss is inf after a few dozen steps); clean
# with lr=0.05.
SCRIPT = """import torch

torch.manual_seed(0)
x = torch.randn(64, 4) * 3
y = x.sum(1, keepdim=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
for step in range(STEPS):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    print("loss", loss.item())
"""


def _fix(fix_id: str, score: float) -> Fix:
    return Fix(id=fix_id, score=score, title=fix_id, why="", example_patch="")


def _report(script, step: int | None = 3) -> Report:
    return Report(
        status="nonfinite",
        script=ScriptInfo(
            path=str(script), argv=[], sha256=hashlib.sha256(script.read_bytes()).hexdigest()
        ),
        event=Event(kind="nonfinite", phase="forward", step=step, message="inf"),
    )


def test_steps_to_run_are_ten_times_those_to_the_event_and_at_least_a_margin_more(tmp_path):
    script = tmp_path / "t.py"
    script.write_text("")
    assert steps_to_run(_report(script, step=7)) == 80  # an lr / 10 slows a divergence 10x
    assert steps_to_run(_report(script, step=0)) == 11  # the event step, then 10 more
    assert steps_to_run(_report(script, step=0), margin_steps=2) == 10
    assert steps_to_run(_report(script, step=None)) is None


def test_rank_verified_keeps_the_engine_order_within_each_outcome():
    fixes = [_fix("a", 0.9), _fix("b", 0.8), _fix("c", 0.7), _fix("d", 0.6)]
    fixes[0].verified, fixes[1].verified, fixes[2].verified = False, None, True
    assert [f.id for f in rank_verified(fixes)] == ["c", "b", "d", "a"]


@pytest.mark.slow
def test_fixes_that_work_are_verified_and_rank_first(tmp_path):
    script = tmp_path / "train.py"
    original = SCRIPT.replace("STEPS", "1000")
    script.write_text(original)
    report = _report(script)
    # use-bf16 has no float16 to change (no patch: not run); enable-grad-clipping bounds the
    # updates of lr=0.5; lower-learning-rate takes lr to 0.05. Both keep the run finite.
    report.fixes = [
        _fix("use-bf16", 0.9),
        _fix("enable-grad-clipping", 0.8),
        _fix("lower-learning-rate", 0.7),
    ]
    report = verify_fixes(report, top=3, margin_steps=20)
    by_id = {f.id: f for f in report.fixes}
    assert by_id["lower-learning-rate"].verified is True
    note = by_id["lower-learning-rate"].verify_note
    assert note.startswith("patched run stayed finite for 40 steps; its loss fell from ")
    assert by_id["use-bf16"].verified is None
    assert by_id["use-bf16"].verify_note.startswith("not verified: ")
    assert by_id["enable-grad-clipping"].verified is True
    assert [f.id for f in report.fixes] == [
        "enable-grad-clipping",
        "lower-learning-rate",
        "use-bf16",
    ]
    assert script.read_text() == original  # the user's file is never modified
    assert not list(tmp_path.glob("*.diagnose-bak"))


@pytest.mark.slow
def test_a_fix_that_does_not_help_is_marked_false_and_sinks(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace("STEPS", "40").replace("lr=0.5", "lr=500.0"))
    report = _report(script, step=2)
    report.fixes = [_fix("lower-learning-rate", 0.9), _fix("add-lr-warmup", 0.5)]
    report = verify_fixes(report, top=1)
    assert [f.id for f in report.fixes] == ["add-lr-warmup", "lower-learning-rate"]
    failed = report.fixes[1]
    assert failed.verified is False
    assert failed.verify_note.startswith("patched run still produced")
    assert report.fixes[0].verified is None  # beyond top=1: not tried


@pytest.mark.slow
def test_the_patched_copy_still_imports_sibling_modules(tmp_path):
    (tmp_path / "settings.py").write_text("LR = 0.5\n")
    script = tmp_path / "train.py"
    script.write_text(
        SCRIPT.replace("STEPS", "30")
        .replace("import torch\n", "import torch\nimport settings\n", 1)
        .replace("lr=0.5", "lr=settings.LR")
    )
    report = _report(script)
    report.fixes = [_fix("enable-grad-clipping", 0.9)]
    report = verify_fixes(report, top=1)
    assert report.fixes[0].verified is True, report.fixes[0].verify_note


# One training step: a run that never trains is "untrained", which verifies nothing.
ONE_STEP = (
    "import torch\n"
    "model = torch.nn.Linear(2, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "model(torch.ones(1, 2)).sum().backward()\n"
    "opt.step()\n"
)


def test_a_patched_run_that_never_trains_verifies_nothing():
    from diagnose.verify import _judge

    typo = _judge({"status": "untrained", "exit_code": 2, "history": []}, None)
    assert typo.verified is False
    assert typo.note == "patched run exited with status 2 before its first training step"
    idle = _judge({"status": "untrained", "exit_code": None, "history": []}, None)
    assert (idle.verified, idle.note) == (
        None,
        "not verified: the patched run took no training step",
    )


def test_a_changed_config_file_is_read_by_its_relative_path(tmp_path, monkeypatch):
    from diagnose.patches import PatchResult
    from diagnose.verify import run_change

    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "run.py"
    config.write_text("bad = True\n")
    script = tmp_path / "train.py"
    script.write_text(
        "exec(open('conf/run.py').read())\nif bad:\n    raise RuntimeError('still bad')\n"
        + ONE_STEP
    )
    monkeypatch.chdir(tmp_path)
    change = PatchResult("diff", "note", file=str(config), file_source="bad = False\n")
    outcome = run_change(script, change, [], None, timeout=120)
    # it trains nothing, so it verifies nothing: what counts is that it read the new file
    assert outcome.data["status"] != "exception" and outcome.verified is not False, outcome.note
    assert config.read_text() == "bad = True\n"  # the user's file is untouched


def test_a_changed_command_line_is_what_the_run_gets(tmp_path):
    from diagnose.patches import PatchResult
    from diagnose.verify import run_change

    script = tmp_path / "train.py"
    script.write_text(
        "import sys\nif sys.argv[1:] != ['--ok=1']:\n    raise RuntimeError('wrong argv')\n"
        + ONE_STEP
    )
    outcome = run_change(script, PatchResult(None, "note", argv=["--ok=1"]), ["--ok=0"], None, 120)
    assert outcome.data["status"] != "exception" and outcome.verified is not False, outcome.note
    outcome = run_change(script, PatchResult(None, "note", argv=["--ok=0"]), ["--ok=1"], None, 120)
    assert outcome.verified is False and "wrong argv" in outcome.note


def test_a_patched_run_killed_outright_fails_and_says_how_without_its_escapes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("")
    source = (
        "import os, sys\n"
        "sys.stderr.write('\\x1b[1mboom\\x1b[0m\\n'); sys.stderr.flush()\n"
        "os.kill(os.getpid(), 9)\n"
    )
    outcome = run_patched(script, source, [], None, timeout=120)
    assert outcome.verified is False
    assert outcome.note == "patched run died before it could report: killed by SIGKILL: boom"


SILENT = {
    "status": "silent",
    "symptoms": [{"id": "gradients-never-cleared", "title": "Gradients are never cleared"}],
}


def test_a_patched_run_that_does_not_learn_has_not_fixed_a_run_that_did_not_learn():
    outcome = _judge(SILENT, 40, must_learn=True)
    assert outcome.verified is False
    assert outcome.note == "patched run still does not learn: Gradients are never cleared"


FALLING = [{"step": 0, "loss": 4.5}, {"step": 1, "loss": 2.25}]


def test_a_patched_run_that_stays_finite_and_learns_fixes_a_nan_and_tells_what_else_it_showed():
    outcome = _judge({**SILENT, "history": FALLING}, 40)
    assert outcome.verified is True
    assert outcome.note == (
        "patched run stayed finite for 2 steps, the whole run; its loss fell from 4.5 to 2.25; "
        "but: Gradients are never cleared"
    )


def test_one_rule_for_every_fix_finite_is_not_enough_without_a_falling_loss():
    flat = [{"step": 0, "loss": 4.5}, {"step": 1, "loss": 4.5}]
    for must_learn in (False, True):
        still = _judge({"status": "clean", "history": flat}, 2, must_learn=must_learn)
        assert still.verified is False
        assert still.note == (
            "patched run stayed finite for 2 steps; its loss did not fall (4.5 -> 4.5)"
        )
        no_loss = [{"step": 0}, {"step": 1}]
        unknown = _judge({"status": "clean", "history": no_loss}, 2, must_learn=must_learn)
        assert unknown.verified is None
        assert unknown.note.startswith(
            "not verified: patched run stayed finite for 2 steps, but its loss was not recorded"
        )


def test_a_patched_run_that_now_learns_says_how_far_its_loss_fell():
    history = [
        {"step": 0, "loss": 4.5},
        {"step": 1, "loss": float("nan")},
        {"step": 2, "loss": 2.25},
    ]
    outcome = _judge({"status": "clean", "history": history}, 3, must_learn=True)
    assert outcome.verified is True
    assert outcome.note == "patched run stayed finite for 3 steps; its loss fell from 4.5 to 2.25"
    flat = [{"step": 0, "loss": 4.5}, {"step": 1, "loss": 4.5}]
    still = _judge({"status": "clean", "history": flat}, 2, must_learn=True)
    assert still.verified is False
    assert still.note == "patched run stayed finite for 2 steps; its loss did not fall (4.5 -> 4.5)"


def test_a_patched_run_that_ended_before_its_step_budget_says_how_far_it_went():
    history = [{"step": i, "loss": 10.0 - i / 10} for i in range(64)]
    clean = {"status": "clean", "history": history}
    assert _judge(clean, 130).note.startswith(
        "patched run stayed finite for 64 steps, the whole run; its loss fell"
    )
    assert _judge(clean, 64).note.startswith("patched run stayed finite for 64 steps; its loss")


def test_a_patched_run_stopped_by_a_signal_is_not_verified_either_way():
    outcome = _judge({"status": "interrupted", "interruption": {"cause": "SIGTERM"}}, None)
    assert outcome.verified is None
    assert outcome.note == "not verified: the patched run was stopped by SIGTERM"
