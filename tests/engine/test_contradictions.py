"""A rule's ``contradicted_by``: facts of the same report that rule its symptom's story out.

A contradicted rule does not fire (its fixes are not offered); a symptom whose every rule is
contradicted is set aside with why, and no longer calls the run broken.
"""

from __future__ import annotations

import math
import textwrap

from diagnose.engine import analyze, load_rules, rule_confidence
from diagnose.engine.contradictions import contradiction
from diagnose.report import Learning, LossInput, Report, ScriptInfo, StepRecord


def _chance_run(lr: float) -> Report:
    """A 4-class run whose loss sits at ln(4) for 200 steps while the weights move."""
    chance = math.log(4)
    history = [
        StepRecord(step=i, loss=chance + 0.01 * math.sin(i), lr=lr, grad_norm=1.0)
        for i in range(200)
    ]
    learning = Learning(
        backward_passes=200,
        optimizer_steps=200,
        optimizers=1,
        weight_change=0.3,
        losses=[LossInput(function="cross_entropy", classes=4, input_shape=[32, 4])],
    )
    return Report.model_validate(
        {
            "status": "clean",
            "script": ScriptInfo(path="train.py").model_dump(),
            "history": [h.model_dump() for h in history],
            "learning": learning.model_dump(),
            "config": {"optimizer": "Adam", "lr": lr},
        }
    )


def test_labels_are_not_blamed_beside_an_lr_hundreds_of_times_below_the_usual():
    report = analyze(_chance_run(1.6e-6))
    assert [s.id for s in report.symptoms] == []
    assert "fix-label-alignment" not in [f.id for f in report.fixes]
    (aside,) = report.set_aside
    assert aside.id == "loss-at-chance"
    assert aside.evidence[-1].startswith("ruled out: the most lr the run used, 1.6e-6, is")
    assert report.status == "clean"


def test_at_a_usual_lr_the_loss_at_chance_still_points_at_the_labels():
    report = analyze(_chance_run(1e-3))
    assert [s.id for s in report.symptoms] == ["loss-at-chance"]
    assert report.fixes[0].id == "fix-label-alignment" and report.set_aside == []
    assert report.status == "silent"


def test_raise_lr_is_ruled_out_when_nothing_the_optimizers_hold_requires_grad():
    (rule,) = [r for r in load_rules()[0] if r.id == "lr-too-low"]
    facts = {"symptom.lr-too-low": 0.9, "learning.trainable_elements": 0}
    assert rule_confidence(rule, facts) is None
    assert "no parameter the optimizers hold requires grad" in contradiction(rule, facts)
    assert rule_confidence(rule, {**facts, "learning.trainable_elements": 10}) == 0.9


def test_a_contradiction_on_an_unknown_fact_is_a_load_problem_with_its_line(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        textwrap.dedent(
            """
            id: mine
            title: t
            symptom: loss-at-chance
            description: d
            why: w
            fixes: [{id: fix-label-alignment, weight: 1.0}]
            contradicted_by:
              - when: {fact: no.such.fact, operator: eq, value: 1}
                why: never
            tests:
              match: [{symptom.loss-at-chance: 0.9}]
              no_match: [{}]
            """
        ).lstrip()
    )
    _, problems = load_rules(tmp_path, builtin=False)
    (problem,) = problems
    assert problem.line == 8 and "unknown fact 'no.such.fact'" in problem.reason


def test_relu_or_residual_is_ruled_out_when_the_only_saturated_unit_is_an_unreachable_output():
    (rule,) = [r for r in load_rules()[0] if r.id == "saturated-activations"]
    facts = {
        "symptom.saturated-activations": 0.85,
        "learning.output_out_of_reach": True,
        "learning.saturated_only_output": True,
    }
    assert rule_confidence(rule, facts) is None
    hidden_too = {**facts, "learning.saturated_only_output": False}
    assert rule_confidence(rule, hidden_too) == 0.85


def test_the_text_report_names_a_set_aside_symptom_with_why_and_offers_it_no_fix():
    from diagnose.render.text import render_text

    text = render_text(analyze(_chance_run(1.6e-6)))
    assert "Ruled out by the run's own facts" in text
    assert "loss-at-chance: the most lr the run used, 1.6e-6, is hundreds of times" in text
    assert "fix-label-alignment" not in text
