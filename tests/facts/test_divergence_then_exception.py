"""An exception raised because the loss diverged is diagnosed as the divergence, not only as
an exception: the optimisation symptoms read such a run, and a plain exception stays one."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from diagnose.facts.symptoms.detect import diverged_then_raised
from diagnose.runner import diagnose_script
from tests.forked import run_python

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "hand_sgd_perplexity_overflow.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def diverged():
    return diagnose_script(SCRIPT, ["--lr", "20000", "--clip", "1e9"])


def test_the_overflow_in_the_scripts_logging_is_the_event(diverged):
    assert diverged.status == "exception"
    assert diverged.event.exception_type == "OverflowError"
    assert diverged.learning.optimizer_steps == 0  # the update is written by hand


def test_the_lr_flag_of_a_hand_written_update_is_the_runs_lr(diverged):
    assert diverged.facts["lr"] == 20000.0
    assert diverged.facts["lr.usual"] == 2.0  # the script's default of --lr
    assert diverged.config.origins["lr"].kind == "argv"


def test_the_divergence_before_the_exception_ranks_the_lr_fix_first(diverged):
    symptoms = {s.id: s for s in diverged.symptoms}
    assert {"script-exception", "lr-too-high"} <= set(symptoms)
    evidence = " ".join(symptoms["lr-too-high"].evidence)
    assert "lr 2.0e4 is 1.0e4x the usual 2 (the script's default of --lr)" in evidence
    assert "before the script raised OverflowError" in evidence
    fix = diverged.fixes[0]
    assert fix.id == "lower-learning-rate"
    assert fix.patch_argv == ["--lr", "2.0", "--clip", "1e9"]


def test_the_advised_command_trains(diverged, tmp_path):
    done = run_python([str(SCRIPT), *diverged.fixes[0].patch_argv], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-1000:]
    losses = [float(x) for x in re.findall(r"loss +([\d.]+)", done.stdout)]
    assert len(losses) == 3 and losses[-1] < losses[0] < math.log(50)


def test_an_exception_after_a_falling_loss_is_only_an_exception():
    facts = {"event.kind": "exception", "run.loss_growth": 0.4}
    assert not diverged_then_raised(facts)
    assert diverged_then_raised({**facts, "run.loss_growth": 80.0})
    assert not diverged_then_raised({"event.kind": "nonfinite", "run.loss_growth": 80.0})


def test_max_steps_counts_the_backward_passes_of_a_hand_written_update():
    report = diagnose_script(SCRIPT, ["--batches", "40"], max_steps=7)
    assert report.status == "clean"
    assert report.learning.backward_passes == 7
    assert report.steps_recorded == 7


def test_the_config_says_the_weights_were_updated_by_hand_with_the_flags_lr(diverged):
    from diagnose.render.text import render_text

    config = render_text(diverged).split("Config\n", 1)[1].splitlines()[0]
    assert "optimizer none (weights updated by hand); lr 2.00e4 (its lr flag)" in config


def test_a_clip_limit_above_every_gradient_norm_is_lowered_to_the_scripts_default(diverged):
    symptoms = {s.id: s for s in diverged.symptoms}
    assert "clipping never acted" in symptoms["clip-never-acts"].evidence[0]
    fix = next(f for f in diverged.fixes if f.id == "enable-grad-clipping")
    assert fix.patch_argv == ["--lr", "20000", "--clip", "0.25"], fix.patch_note
    assert [f.id for f in diverged.fixes].index("lower-learning-rate") == 0
