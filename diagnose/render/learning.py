"""The evidence behind a "not learning" verdict, as lines every output format shows.

A finding such as "the loss stays at the chance level" is a claim about curves; the reader
should see them: the loss from its start to its end against the chance level, the lr over the
run, and how the gradient spreads over the layers. The lines are raw text (module names come
from the user's model): callers escape them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from diagnose.learning.findings import chance_level
from diagnose.render.numbers import learning_note, num
from diagnose.report import Report

BARS = "▁▂▃▄▅▆▇█"
CURVE_WIDTH = 48


@dataclass(frozen=True)
class LearningEvidence:
    """What a finite run's curves show, each a line of text."""

    loss: str | None
    curve: str | None
    lr: str | None
    gradients: str | None
    per_optimizer: str | None = None

    def lines(self) -> list[str]:
        shown = (self.loss, self.per_optimizer, self.curve, self.lr, self.gradients)
        return [line for line in shown if line]


def learning_evidence(report: Report) -> LearningEvidence | None:
    """For a run with a finding of not learning: its loss, lr and per-layer gradient lines."""
    if learning_note(report) is None or report.learning is None:
        return None
    learning = report.learning
    level = chance_level(learning)
    losses = _series(report, "loss")
    if losses:
        loss = _loss_line(losses, level)
    else:
        losses = [(0, x) for x in learning.loss_series if math.isfinite(x)]
        loss = _pass_loss_line([x for _, x in losses], learning.backward_passes, level)
    curve = [x for _, x in losses]
    evidence = LearningEvidence(
        loss=loss,
        curve=f"{_sparkline(curve)}  ({num(min(curve))} to {num(max(curve))})"
        if len(curve) >= 3
        else None,
        lr=_lr_line(_series(report, "lr")),
        gradients=_gradient_line(report),
        per_optimizer=_per_optimizer_line(report),
    )
    return evidence if evidence.lines() else None


def _per_optimizer_line(report: Report) -> str | None:
    """With several optimizers, each one's own loss (the backward before its steps): the
    history's loss is one of them, and a finding about another is read against its own."""
    losses = [x for x in report.learning.optimizer_losses if x.first is not None]  # type: ignore[union-attr]
    if len(losses) < 2:
        return None
    parts = [f"{x.name} {num(x.first)} -> {num(x.last)}" for x in losses]
    return "each optimizer's own loss, first -> last: " + ", ".join(parts)


def _series(report: Report, field: str) -> list[tuple[int, float]]:
    values = ((row.step, getattr(row, field)) for row in report.history)
    return [(step, value) for step, value in values if value is not None and math.isfinite(value)]


def _loss_line(losses: list[tuple[int, float]], level: tuple[int, float] | None) -> str:
    return _span("loss", losses) + _chance(level)


def _pass_loss_line(
    losses: list[float], passes: int, level: tuple[int, float] | None
) -> str | None:
    """A run without optimizer steps: its losses were sampled at backward passes."""
    if not losses:
        return None
    line = f"loss {num(losses[0])} at the first backward pass -> {num(losses[-1])} by pass {passes}"
    if min(losses) < min(losses[0], losses[-1]):
        line += f", lowest {num(min(losses))}"
    return line + _chance(level)


def _chance(level: tuple[int, float] | None) -> str:
    return "" if level is None else f"; chance level ln({level[0]}) = {num(level[1])}"


def _lr_line(lrs: list[tuple[int, float]]) -> str | None:
    if not lrs:
        return None
    if len({value for _, value in lrs}) == 1:
        return f"lr {num(lrs[0][1])} at every recorded step"
    return _span("lr", lrs)


def _span(name: str, points: list[tuple[int, float]]) -> str:
    """'loss 2.3 at step 0 -> 2.1 at step 159, lowest 2 at step 80': the ends, and the lowest
    point when it lies between them."""
    (first_at, first), (last_at, last) = points[0], points[-1]
    low_at, low = min(points, key=lambda point: point[1])
    line = f"{name} {num(first)} at step {first_at} -> {num(last)} at step {last_at}"
    if low < min(first, last):
        line += f", lowest {num(low)} at step {low_at}"
    return line


def _gradient_line(report: Report) -> str | None:
    learning = report.learning
    layers = learning.layer_grads if learning else []
    if not layers:
        return None
    norms = ", ".join(f"{layer.module} {num(layer.norm)}" for layer in layers)
    return f"gradient norm by layer on the last checked step, input side first: {norms}"


def _sparkline(values: list[float]) -> str:
    """The curve in bars, bucketed to ``CURVE_WIDTH`` means, from its lowest to its highest."""
    width = min(CURVE_WIDTH, len(values))
    buckets = [
        values[i * len(values) // width : (i + 1) * len(values) // width] for i in range(width)
    ]
    means = [sum(bucket) / len(bucket) for bucket in buckets]
    low, high = min(means), max(means)
    if high - low <= 1e-6 * max(abs(high), 1e-12):
        return BARS[0] * width
    scale = (len(BARS) - 1) / (high - low)
    return "".join(BARS[round((m - low) * scale)] for m in means)
