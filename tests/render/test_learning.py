"""A "not learning" verdict shows the curves it rests on, in every output format."""

from __future__ import annotations

import math

import pytest

from diagnose.render import render
from diagnose.render.learning import learning_evidence
from tests.render.sample_reports import silent_report as _silent


def test_the_loss_is_shown_against_its_start_its_lowest_and_the_chance_level():
    losses = [2.31, 2.2, 2.05, 2.3, 2.28]
    evidence = learning_evidence(_silent(losses))
    assert evidence is not None
    assert evidence.loss == (
        "loss 2.31 at step 0 -> 2.28 at step 4, lowest 2.05 at step 2; "
        f"chance level ln(10) = {math.log(10):.3g}"
    )
    assert evidence.curve is not None and evidence.curve.endswith("(2.05 to 2.31)")


def test_a_flat_lr_is_one_value_and_a_collapsing_one_its_start_and_end():
    assert learning_evidence(_silent([2.3] * 4)).lr == "lr 0.001 at every recorded step"
    collapsing = learning_evidence(_silent([2.3] * 4, lrs=[0.1, 1e-3, 1e-5, 1e-7]))
    assert collapsing.lr == "lr 0.1 at step 0 -> 1.0e-7 at step 3"


def test_each_layers_gradient_norm_is_listed_input_side_first():
    evidence = learning_evidence(_silent([2.3] * 4, layers=("net.emb", "net.mid", "net.head")))
    assert evidence.gradients.endswith("net.emb 0.5, net.mid 1, net.head 1.5")


def test_a_run_without_a_finding_about_learning_has_no_learning_section():
    report = _silent([2.3] * 4, status="clean").model_copy(update={"symptoms": []})
    assert learning_evidence(report) is None
    assert "Learning" not in render(report, "text")


def test_a_run_that_never_stepped_shows_its_losses_by_backward_pass():
    report = _silent([]).model_copy(deep=True)
    report.learning.loss_series = [5.0, 4.0, 6.0]
    report.learning.backward_passes = 40
    evidence = learning_evidence(report)
    assert evidence.loss.startswith("loss 5 at the first backward pass -> 6 by pass 40, lowest 4")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_text_and_markdown_carry_the_section(fmt):
    out = render(_silent([2.31, 2.2, 2.05, 2.3, 2.28]), fmt)
    assert "Learning" in out
    assert "chance level ln(10)" in out and "net.fc1 0.5, net.fc2 1" in out


def test_a_module_name_from_the_run_reaches_the_terminal_inert():
    out = render(_silent([2.3] * 4, layers=("evil\x1b]0;owned\x07", "net.head")), "text")
    assert "\x1b" not in out and "\x07" not in out
