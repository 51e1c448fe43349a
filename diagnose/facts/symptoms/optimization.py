"""Symptoms of the optimisation: the lr, exploding gradients, clipping and the initial weights."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.heuristics import threshold
from diagnose.facts.symptoms.detect import diverged_finite, diverged_then_raised
from diagnose.facts.symptoms.evidence import driven_by_lr, noisy_or, place
from diagnose.facts.symptoms.registry import DIVERGED, NONFINITE, symptom
from diagnose.formatting import num
from diagnose.report import Report, Symptom


@symptom(
    "bad-initialization",
    title="bad initialisation",
    related_tags=["numerical-stability", "parameters", "nan"],
)
def bad_initialization(f: Facts, report: Report) -> Symptom | None:
    if not f.get("weights.at_start"):
        return None
    if f.get("weights.nonfinite"):
        return Symptom(
            id="bad-initialization",
            confidence=0.95,
            evidence=["weights were already inf/nan before the first optimizer step"],
        )
    largest = f.get("weights.max_abs")
    if largest is not None and largest >= threshold("huge_initial_weight", 100.0):
        return Symptom(
            id="bad-initialization",
            confidence=0.75,
            evidence=[
                f"weights reach |w| = {num(largest)} before the first optimizer step "
                "(a usual initialisation keeps them below 1)"
            ],
        )
    return None


@symptom(
    "lr-too-high",
    title="learning rate too high",
    related_tags=["divergence", "gradients", "nan"],
    reads=(NONFINITE, DIVERGED),
)
def lr_too_high(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.step") == 0 and f.get("event.phase") != "optimizer":
        return None  # no update has been applied yet: the lr cannot have caused it
    if f.get("event.phase") == "input":
        return None  # the batch came in non-finite: no update made it so
    parts: list[float] = []
    evidence: list[str] = []
    ratio, lr_note = _lr_ratio(f)
    if ratio is not None and ratio >= 10:
        # Two orders of magnitude above the optimizer's usual lr is a cause on its own: the
        # trends and overflows that follow (exploding gradients, exp of a drifting input) are
        # what it does, so it ranks above the fixes that only treat them.
        parts.append(0.9 if ratio >= 100 else 0.45)
        evidence.append(lr_note)
    trend_parts: list[float] = []
    if diverged_then_raised(f) or diverged_finite(f):
        growth = f["run.loss_growth"]
        trend_parts.append(0.75 if growth >= 100 else 0.6)
        ending = (
            "and stayed finite to the end of the run"
            if diverged_finite(f)
            else f"before the script raised {f.get('event.exception_type') or 'an exception'}"
        )
        evidence.append(
            f"the loss grew {num(growth)}x over the run ({num(f.get('run.loss_start'))} -> "
            f"{num(f.get('run.loss_end'))}) {ending}"
        )
    trend = _loss_trend(f)
    if trend is not None:
        trend_parts.append(trend[0])
        evidence.append(trend[1])
    growth, rising = f.get("grad_norm_growth"), f.get("grad_norm.rising_steps", 0)
    if growth is not None and growth >= 3 and rising >= 2:
        trend_parts.append(0.6 if growth >= 10 and rising >= 3 else 0.3)
        evidence.append(f"gradient norm grew {num(growth)}x, rising {rising} steps in a row")
    weight_growth = f.get("weight_norm_growth")
    if weight_growth is not None and weight_growth >= 2:
        trend_parts.append(0.4)
        evidence.append(f"weight norm grew {num(weight_growth)}x over the last steps")
    update_ratio = f.get("update_ratio.max")
    if update_ratio is not None and update_ratio >= 0.1:
        trend_parts.append(0.5)
        evidence.append(
            f"update-to-weight ratio reached {num(update_ratio)} (around 1e-3 is usual)"
        )
    if not parts and not trend_parts:
        return None
    if trend_parts and ratio is not None and 3 <= ratio < 10:
        # A few times the default is common practice: it supports a divergence, alone it is none.
        parts.append(0.2)
        evidence.insert(0, lr_note)
    confidence = noisy_or(*parts, *trend_parts)
    if ratio is not None and ratio <= 1.5:
        confidence *= 0.85  # a steady divergence at an ordinary lr: still the lr, less surely
    return Symptom(id="lr-too-high", confidence=min(confidence, 0.95), evidence=evidence)


def _loss_trend(f: Facts) -> tuple[float, str] | None:
    """How surely the loss's climb before the event says the updates diverged, and how."""
    loss_trend, loss_rising = f.get("loss_trend"), f.get("loss.rising_steps", 0)
    points = f.get("loss.points") or 0
    if loss_trend is None:
        return None
    if loss_trend >= 3 and loss_rising >= 2:
        return (
            0.75 if loss_trend >= 10 and loss_rising >= 3 else 0.45,
            f"loss grew {num(loss_trend)}x over the last steps ({num(f.get('loss.first'))} -> "
            f"{num(f.get('loss.last'))}), rising {loss_rising} steps in a row before the event",
        )
    if loss_trend >= 10 and 2 <= points <= 3 and loss_rising >= points - 1:
        # a run that died within its first steps has no longer trend to show: a loss that
        # rose tenfold on every one of them is the divergence itself
        return (
            0.6,
            f"the loss grew {num(loss_trend)}x over the run's first {points} steps "
            f"({num(f.get('loss.first'))} -> {num(f.get('loss.last'))}), rising on each, "
            "before the event",
        )
    return None


def _lr_ratio(f: Facts) -> tuple[float | None, str]:
    """How many times the usual lr the user's lr is, and that in words: against the usual for
    the run (the framework's or the script's default, else the optimizer's), the same figure
    the lr fix sizes its value by; else against the optimizer's usual lr."""
    ratio = f.get("lr_vs_usual")
    if ratio is not None:
        return ratio, (
            f"lr {num(f.get('lr.user', f.get('lr')))} is {num(ratio)}x the usual "
            f"{num(f.get('lr.usual'))} ({f.get('lr.usual_source')})"
        )
    ratio = f.get("lr_vs_typical")
    return ratio, (
        f"lr {num(f.get('lr'))} is {num(ratio)}x the usual {num(f.get('lr.typical'))} "
        f"for {f.get('optimizer')} ({f.get('lr.typical_source')})"
    )


@symptom(
    "exploding-gradients",
    title="exploding gradients",
    related_tags=["gradient-clipping", "divergence", "gradients"],
)
def exploding_gradients(f: Facts, report: Report) -> Symptom | None:
    parts: list[float] = []
    evidence: list[str] = []
    jump = threshold("sudden_jump", 100.0)
    # A spike after steady steps is the signature of one exploding gradient; a steady,
    # step-over-step growth is more the learning rate's (see lr_too_high).
    for name, label in (("loss", "loss"), ("grad_norm", "gradient norm")):
        last_jump = f.get(f"{name}.last_jump")
        if last_jump is not None and last_jump >= jump and f.get(f"{name}.rising_steps", 0) <= 1:
            parts.append(0.75)
            steady = " after steady steps" if f.get(f"{name}.points", 0) >= 3 else ""
            evidence.append(
                f"the {label} jumped {num(last_jump)}x in one step{steady}: one huge gradient"
            )
            break
    growth = f.get("grad_norm_growth")
    if growth is not None and growth >= 10:
        parts.append(0.5)
        evidence.append(
            f"gradient norm grew {num(growth)}x over the last steps "
            f"({num(f.get('grad_norm.first'))} -> {num(f.get('grad_norm.last'))})"
        )
    largest = f.get("grad_norm.max")
    if largest is not None and largest >= threshold("grad_norm_huge", 1e4):
        parts.append(0.4)
        evidence.append(f"gradient norm reached {num(largest)}")
    if f.get("grad_norm.nonfinite"):
        parts.append(0.4)
        evidence.append("the gradient norm itself became non-finite")
    if (
        f.get("event.phase") in ("backward", "optimizer")
        and f.get("event.has_inf")
        and not f.get("event.op_family")
    ):
        parts.append(0.4)
        evidence.append(
            f"the first inf appeared in the {f['event.phase']} pass {place(f)}".rstrip()
        )
    if not parts:
        return None
    confidence = driven_by_lr(f, min(noisy_or(*parts), 0.95), evidence, "they grew")
    return Symptom(id="exploding-gradients", confidence=confidence, evidence=evidence)


@symptom("no-grad-clipping", title="no gradient clipping", reads=(NONFINITE, DIVERGED))
def no_grad_clipping(f: Facts, report: Report) -> Symptom | None:
    if f.get("grad_clip.enabled") or f.get("event.phase") == "input":
        return None
    if not f.get("history.steps") or f.get("event.step") == 0:
        return None  # before any update, clipping could not have changed anything
    if f.get("event.phase") not in ("backward", "optimizer") and not (
        lr_too_high(f, report) or exploding_gradients(f, report)
    ):
        return None  # a forward op's own fault (log(0), x/0, an fp16 eps): no update size in it
    confidence = 0.8 if f.get("config.captured") else 0.4
    return Symptom(
        id="no-grad-clipping",
        confidence=confidence,
        evidence=["no gradient clipping (clip_grad_norm_ / clip_grad_value_) was seen in the run"],
    )


@symptom(
    "clip-never-acts",
    title="gradient clipping that never clips",
    related_tags=["gradient-clipping", "divergence", "gradients"],
    reads=(NONFINITE, DIVERGED),
)
def clip_never_acts(f: Facts, report: Report) -> Symptom | None:
    """A clip-by-norm whose limit is above every gradient norm the run saw did nothing: in a
    diverging run it is as if there were no clipping (a limit raised by a flag or a config)."""
    if not f.get("grad_clip.enabled") or f.get("grad_clip.kind") != "norm":
        return None
    limit, largest = f.get("grad_clip.max"), f.get("grad_norm.run_max")
    if not isinstance(limit, int | float) or not isinstance(largest, int | float):
        return None
    if largest <= 0 or limit <= largest * threshold("clip_never_acts_margin", 1.01):
        return None
    if not (lr_too_high(f, report) or exploding_gradients(f, report)):
        return None  # a run that does not diverge needs no clipping to act
    return Symptom(
        id="clip-never-acts",
        confidence=0.6,
        evidence=[
            f"gradients are clipped at a norm of {num(limit)}, above every gradient norm the "
            f"run saw (the largest {num(largest)}): the clipping never acted"
        ],
    )
