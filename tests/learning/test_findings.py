"""From a finite run's evidence to symptoms: what each finding rests on, and what it is not.

The evidence here is the plain data a run's report carries (``Learning`` and the step
history), written out as a run of that length would leave it.
"""

from __future__ import annotations

import math

from diagnose.learning.findings import BROKEN, detect_learning_symptoms, is_broken
from diagnose.report import Learning, LossInput, ModuleNote, Report, ScriptInfo, StepRecord


def _report(learning: Learning, losses: list[float] = (), lrs: list[float] = ()) -> Report:
    n = max(len(losses), len(lrs))
    history = [
        StepRecord(
            step=i,
            loss=losses[i] if i < len(losses) else None,
            lr=lrs[i] if i < len(lrs) else None,
            grad_norm=1.0,
        )
        for i in range(n)
    ]
    return Report(
        status="clean", script=ScriptInfo(path="train.py"), history=history, learning=learning
    )


def _ids(report: Report) -> list[str]:
    return [s.id for s in detect_learning_symptoms(report)]


def _steps(n: int) -> Learning:
    return Learning(backward_passes=n, optimizer_steps=n, optimizers=1, weight_change=0.3)


def test_a_run_that_learns_has_no_finding() -> None:
    losses = [2.3 * math.exp(-i / 40) + 0.1 for i in range(200)]
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=10)]
    assert _ids(_report(evidence, losses)) == []


def test_steps_on_uncleared_gradients_need_every_checked_step_uncleared() -> None:
    never = _steps(20).model_copy(update={"clear_checked": 12, "uncleared": 12})
    once = _steps(20).model_copy(update={"clear_checked": 12, "uncleared": 11})
    assert _ids(_report(never)) == ["gradients-never-cleared"]
    assert _ids(_report(once)) == []


def test_backward_without_a_step_needs_an_optimizer_and_a_few_passes() -> None:
    assert _ids(_report(Learning(backward_passes=5, optimizers=1))) == ["backward-without-step"]
    assert _ids(_report(Learning(backward_passes=5, optimizers=0))) == []  # updates by hand
    assert _ids(_report(Learning(backward_passes=2, optimizers=1))) == []


def test_a_cut_that_leaves_a_small_part_without_gradient_is_not_called_broken() -> None:
    small = _steps(30).model_copy(
        update={
            "optimized_elements": 1000,
            "no_gradient": [ModuleNote(name="Model.pooler", type="Linear", parameters=50)],
        }
    )
    large = small.model_copy(
        update={"no_gradient": [ModuleNote(name="Model.body", type="Linear", parameters=900)]}
    )
    assert _ids(_report(small)) == []  # an unused layer, not a cut worth a claim
    [cut] = detect_learning_symptoms(_report(large))
    assert cut.id == "gradient-flow-cut" and cut.confidence >= BROKEN


def test_a_loss_at_chance_needs_a_run_long_enough_and_moving_weights() -> None:
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=10)]
    flat = [math.log(10) + 0.01 * ((-1) ** i) for i in range(200)]
    [found] = detect_learning_symptoms(_report(evidence, flat))
    assert found.id == "loss-at-chance" and "ln(10) = 2.3" in found.evidence[0]
    assert _ids(_report(evidence, flat[:20])) == []  # too short to show a trend
    still = evidence.model_copy(update={"weight_change": 1e-7})
    assert _ids(_report(still, flat)) == ["lr-too-low"]  # the weights never moved


def test_a_loss_far_above_chance_is_not_at_chance() -> None:
    """Worse than a uniform guess is a model confidently wrong (a diverging lr), not lost."""
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=10)]
    above = [2.3] + [30.0 + (i % 7) for i in range(199)]
    assert "loss-at-chance" not in _ids(_report(evidence, above))


def test_a_short_run_gets_a_weaker_claim_than_a_long_one() -> None:
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=4)]
    flat = [math.log(4)] * 200
    short = detect_learning_symptoms(_report(evidence, flat[:40]))[0].confidence
    long = detect_learning_symptoms(_report(evidence, flat))[0].confidence
    assert short < long and short < BROKEN <= long


def test_an_lr_schedule_that_collapses_early_is_found_but_a_cosine_to_zero_is_not() -> None:
    collapse = [0.1 * 0.1 ** (i // 2) for i in range(100)]
    cosine = [0.05 * (1 + math.cos(math.pi * i / 99)) for i in range(100)]
    warm_then_cosine = [0.1 * (i + 1) / 10 for i in range(10)] + cosine[:90]
    assert _ids(_report(_steps(100), lrs=collapse)) == ["lr-schedule-collapse"]
    assert _ids(_report(_steps(100), lrs=cosine)) == []
    assert _ids(_report(_steps(100), lrs=warm_then_cosine)) == []


def test_raw_inputs_are_a_strong_sign_when_the_loss_does_not_fall_and_none_when_it_does() -> None:
    evidence = _steps(200).model_copy(
        update={"input_module": "Net.fc1", "input_mean": 128.0, "input_std": 60.0}
    )
    evidence.losses = [LossInput(function="cross_entropy", classes=2)]
    flat = [0.69] * 200
    slow = [0.69 * (1 - 0.3 * i / 199) for i in range(200)]  # ends at 70% of its start
    falling = [0.69 * math.exp(-i / 30) for i in range(200)]
    [stuck] = detect_learning_symptoms(_report(evidence, flat))
    [slowly] = detect_learning_symptoms(_report(evidence, slow))
    assert stuck.id == slowly.id == "unnormalized-inputs"
    assert stuck.confidence >= BROKEN > slowly.confidence
    # raw features a model still learns from (a polynomial regression's x**4) are no finding
    assert detect_learning_symptoms(_report(evidence, falling)) == []


def test_a_structural_cause_is_not_restated_as_a_flat_curve() -> None:
    evidence = _steps(200).model_copy(update={"clear_checked": 50, "uncleared": 50})
    evidence.losses = [LossInput(function="cross_entropy", classes=10)]
    assert _ids(_report(evidence, [math.log(10)] * 200)) == ["gradients-never-cleared"]


def test_probabilities_into_a_logit_loss_name_the_producer() -> None:
    evidence = _steps(10)
    evidence.losses = [LossInput(function="cross_entropy", classes=3, producer="softmax")]
    [found] = detect_learning_symptoms(_report(evidence))
    assert found.id == "probabilities-into-logit-loss"
    assert "the output of softmax" in found.evidence[0] and "raw logits" in found.evidence[0]


def test_only_a_finding_sure_enough_calls_the_run_broken() -> None:
    evidence = _steps(200).model_copy(
        update={"input_module": "Net.fc1", "input_mean": 128.0, "input_std": 60.0}
    )
    slow = [1.0 - 0.3 * i / 199 for i in range(200)]  # falls, but only to 70%
    symptoms = detect_learning_symptoms(_report(evidence, slow))
    assert symptoms and not is_broken(symptoms)


def test_a_run_with_an_event_gets_no_learning_finding() -> None:
    report = _report(Learning(backward_passes=5, optimizers=1))
    report.status = "nonfinite"
    assert detect_learning_symptoms(report) == []


def _with_optimizer(report: Report, name: str, lr: float, wd: float, **group) -> Report:
    report.config = report.config.model_validate(
        {
            "optimizer": name,
            "lr": lr,
            "optimizers": [
                {"class": name, "param_groups": [{"lr": lr, "weight_decay": wd, **group}]}
            ],
        }
    )
    return report


FLAT = [1.61 + 0.01 * math.sin(i) for i in range(200)]


def test_a_decay_that_takes_a_share_of_each_weight_per_step_explains_a_flat_loss() -> None:
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=5)]
    adamw = _with_optimizer(_report(evidence, FLAT), "AdamW", 1e-2, 50.0)
    found = detect_learning_symptoms(adamw)
    assert [s.id for s in found] == ["weight-decay-too-strong"]  # not labels at chance
    assert "takes 50% of every weight's size off each step" in found[0].evidence[0]
    sgd = _with_optimizer(_report(evidence, FLAT), "SGD", 0.1, 0.2)
    assert _ids(sgd) == ["weight-decay-too-strong"]  # SGD's L2 term: lr x wd = 2% a step
    coupled = _with_optimizer(_report(evidence, FLAT), "Adam", 1e-3, 5.0)
    assert _ids(coupled) == ["weight-decay-too-strong"]  # outweighs the normalised gradient


def test_a_decay_is_judged_at_the_lr_it_was_built_with_when_a_schedule_ran_it_to_zero():
    # a cosine schedule ends at lr 0 (transformers' Trainer): the group's lr at the end is 0,
    # the history's last window holds only the decayed tail
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=5)]
    tail = [0.0] * 200
    ended = _with_optimizer(_report(evidence, FLAT, tail), "AdamW", 0.0, 1000.0, initial_lr=1e-3)
    found = detect_learning_symptoms(ended)
    assert _ids(ended) == ["weight-decay-too-strong"]
    assert "weight_decay 1000 at lr 0.001 takes 100% of" in found[0].evidence[0]


def test_weights_that_cannot_move_are_broken_even_over_a_short_run() -> None:
    # 100 steps: a short curve weakens a trend, not weights the decay erases every step or an
    # lr that moves them by a billionth
    evidence = _steps(100)
    evidence.losses = [LossInput(function="cross_entropy", classes=5)]
    erased = detect_learning_symptoms(
        _with_optimizer(_report(evidence, FLAT[:100]), "AdamW", 1e-3, 1000.0)
    )
    assert [s.id for s in erased] == ["weight-decay-too-strong"] and erased[0].confidence >= BROKEN
    still = evidence.model_copy(update={"weight_change": 1e-9})
    [low] = detect_learning_symptoms(_report(still, FLAT[:100]))
    assert low.id == "lr-too-low" and low.confidence >= BROKEN
    barely = evidence.model_copy(update={"weight_change": 5e-5})
    [weak] = detect_learning_symptoms(_report(barely, FLAT[:100]))
    assert weak.id == "lr-too-low" and weak.confidence < BROKEN


def test_weights_that_did_not_move_trained_nothing_whatever_the_noisy_loss_did() -> None:
    # minibatch losses that wander from 0.78 down to 0.66 while the weights moved 2e-7 of
    # their size: the loss moved with its batches, not with training
    evidence = _steps(100).model_copy(update={"weight_change": 2e-7})
    noisy = [0.78 - 0.12 * i / 99 + 0.05 * (i % 3 - 1) for i in range(100)]
    [low] = detect_learning_symptoms(_report(evidence, noisy))
    assert low.id == "lr-too-low"
    assert "as its batches differ" in low.evidence[0]
    moved = evidence.model_copy(update={"weight_change": 5e-5})
    falling = [0.78 * (1 - i / 200) for i in range(100)]
    assert _ids(_report(moved, falling)) == []  # weights that moved and a loss that fell


def test_a_clip_at_zero_on_every_step_is_the_cause_not_a_low_lr() -> None:
    evidence = _steps(200).model_copy(update={"weight_change": 0.0})
    clip = {"kind": "norm", "max": 0.0, "calls": 200, "function": "torch.nn.utils.clip_grad_norm_"}
    report = _report(evidence, FLAT)
    report.config = report.config.model_validate({"grad_clip": clip})
    [found] = detect_learning_symptoms(report)  # not lr-too-low: raising the lr multiplies 0
    assert found.id == "gradients-clipped-to-zero" and found.confidence >= BROKEN
    assert "clip_grad_norm_ ran 200 times over 200 steps with max_norm=0" in found.evidence[0]
    rare = {**clip, "calls": 20}  # a clip that ran on a tenth of the steps is not the story
    report.config = report.config.model_validate({"grad_clip": rare})
    assert "gradients-clipped-to-zero" not in _ids(report)
    acting = {**clip, "max": 1.0}
    report.config = report.config.model_validate({"grad_clip": acting})
    assert "gradients-clipped-to-zero" not in _ids(report)


def test_usual_decays_and_runs_that_learn_have_no_decay_finding() -> None:
    evidence = _steps(200)
    evidence.losses = [LossInput(function="cross_entropy", classes=5)]
    for name, lr, wd in [("AdamW", 1e-3, 0.1), ("SGD", 0.1, 5e-4), ("Adam", 1e-3, 1e-2)]:
        report = _with_optimizer(_report(evidence, FLAT), name, lr, wd)
        assert "weight-decay-too-strong" not in _ids(report), name
    falling = [1.61 * math.exp(-i / 50) + 0.05 for i in range(200)]
    assert _ids(_with_optimizer(_report(evidence, falling), "AdamW", 1e-2, 50.0)) == []


def test_inputs_that_are_one_number_explain_a_loss_that_does_not_fall() -> None:
    evidence = _steps(200).model_copy(
        update={
            "input_module": "Sequential.0",
            "input_mean": 0.0,
            "input_std": 0.0,
            "input_constant": True,
        }
    )
    evidence.losses = [LossInput(function="cross_entropy", classes=2)]
    found = detect_learning_symptoms(
        _report(evidence, [0.69 + 0.005 * math.sin(i) for i in range(200)])
    )
    assert [s.id for s in found] == ["constant-inputs"]  # not labels at chance
    assert "holds the one value 0 in every element" in found[0].evidence[0]
    # a constant input a model still learns from (a learned prior over the classes)
    falling = [0.69 * math.exp(-i / 40) + 0.3 for i in range(200)]
    assert _ids(_report(evidence, falling)) == []
    varying = evidence.model_copy(update={"input_constant": False, "input_std": 0.3})
    assert "constant-inputs" not in _ids(_report(varying, [0.69] * 200))
