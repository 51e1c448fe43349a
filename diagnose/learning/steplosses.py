"""Each optimizer's own loss: the loss of the backward before its step.

With one optimizer the run's loss is that loss; with several (a GAN's generator and
discriminator) each steps on its own, and a finding about one of them must be read against its
own loss, not whichever the history row caught. The last backward's loss is kept as a detached
scalar (no host read); it is read at an optimizer's step on its first steps and then on
sampled ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from diagnose.learning.modules import caller_name
from diagnose.report import OptimizerLoss

_READ_FIRST = 8
_READ_EVERY = 16
_LIMIT = 8  # optimizers reported


@dataclass
class _Series:
    name: str
    steps: int = 0
    first: float | None = None
    last: float | None = None
    lowest: float | None = None
    points: int = 0


class StepLosses:
    """The loss each optimizer stepped on, per optimizer."""

    def __init__(self) -> None:
        self._last: torch.Tensor | None = None
        self._by_optimizer: dict[int, _Series] = {}

    def before_backward(self, loss: Any) -> None:
        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            self._last = loss.detach()

    def before_step(self, optimizer: Any) -> None:
        series = self._by_optimizer.get(id(optimizer))
        if series is None:
            if len(self._by_optimizer) >= _LIMIT:
                return
            name = caller_name(optimizer, depth=4) or type(optimizer).__name__
            series = self._by_optimizer[id(optimizer)] = _Series(name)
        series.steps += 1
        if self._last is None:
            return
        if series.steps > _READ_FIRST and series.steps % _READ_EVERY:
            return
        value = float(self._last)
        self._last = None  # a step without its own backward (LBFGS's inner ones) reads none
        if not math.isfinite(value):
            return
        series.first = value if series.first is None else series.first
        series.last = value
        series.lowest = value if series.lowest is None else min(series.lowest, value)
        series.points += 1

    def name_of(self, key: int | None) -> str | None:
        """What the script calls the optimizer of this id, once it has stepped."""
        series = self._by_optimizer.get(key) if key is not None else None
        return series.name if series is not None else None

    def losses(self) -> list[OptimizerLoss]:
        """Each optimizer's series, when there are two or more (one is the run's loss)."""
        if len(self._by_optimizer) < 2:
            return []
        return [
            OptimizerLoss(
                name=s.name,
                steps=s.steps,
                first=s.first,
                last=s.last,
                lowest=s.lowest,
                points=s.points,
            )
            for s in self._by_optimizer.values()
        ]
