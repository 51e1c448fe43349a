"""Warmup is read from what the run did to its lr, and the lr is compared with the usual one."""

from __future__ import annotations

from diagnose.engine import analyze
from diagnose.facts import extract_facts
from diagnose.facts.schedule import warmup_steps
from tests.conftest import EXAMPLES
from tests.traced_scripts import trace_script


def test_a_hand_written_warmup_is_seen_in_the_lr_history_and_warmup_is_not_offered():
    report, _ = trace_script(EXAMPLES / "hand_warmup_high_lr.py")
    facts, _ = extract_facts(report)
    assert facts.get("lr_scheduler") is None  # no scheduler object: the loop sets the lr itself
    assert facts["lr.warmup"] is True and facts["lr.warmup_steps"] >= 5
    assert facts["lr"] == 20.0  # the peak the user set, not the ramp's value at the event
    assert facts["lr_vs_usual"] == 20.0 / 1e-3
    ids = [f.id for f in analyze(report).fixes]
    assert ids[0] == "lower-learning-rate" and "add-lr-warmup" not in ids


def test_a_constant_lr_is_no_warmup():
    report, _ = trace_script(EXAMPLES / "argparse_lr_orders_too_high.py")
    facts, _ = extract_facts(report)
    assert facts["lr.warmup"] is False and facts.get("lr.warmup_steps") is None
    assert facts["lr_vs_usual"] == 5e9 / 1e-3


def test_warmup_steps_counts_the_rise_from_the_start():
    assert warmup_steps([0.1, 0.2, 0.3, 0.3, 0.2]) == 3
    assert warmup_steps([1.0, 1.0, 1.0]) is None  # flat: no warmup
    assert warmup_steps([1.0, 1.01, 1.02]) is None  # float drift, not a ramp
    assert warmup_steps([1.0, 0.5, 0.25]) is None  # a decay
    assert warmup_steps([0.0, 0.0, 0.5]) == 2  # a ramp that starts at zero
