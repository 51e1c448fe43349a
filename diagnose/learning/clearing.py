"""Whether each optimizer's gradients are cleared between its steps.

A step taken on gradients that were never cleared since the step before adds every earlier
batch's gradient again: the update grows with the step count. Clearing is seen directly
(``Optimizer.zero_grad``, ``Module.zero_grad``) or, for scripts that clear by hand
(``p.grad = None``, ``p.grad.zero_()``), from the gradients being empty when the next backward
starts. Gradient accumulation is not a miss: it clears once per step, not per backward.

The order of the calls is watched too: a step taken after ``zero_grad`` cleared the gradients
of the last backward (``loss.backward(); optimizer.zero_grad(); optimizer.step()``, or a step
before the backward meant for it) moves no weight. Such a step is counted only when its
gradients are really empty at the step (a host read on the first steps, then sampled), so a
``zero_grad`` of another model's optimizer never counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

_CHECK_FIRST = 8  # intervals whose hand-clearing is checked with a host read, then sampled
_CHECK_EVERY = 16


@dataclass
class _Interval:
    """One optimizer's state since its last step."""

    steps: int = 0
    cleared: bool = False
    slate_checked: bool = False  # the first backward after the step looked at the gradients
    checked: int = 0
    uncleared: int = 0
    backward_since_clear: bool = False  # a backward ran after the last zero_grad
    order_checked: int = 0
    stepped_cleared: int = 0  # checked steps taken on gradients zero_grad cleared after backward


class ClearingWatch:
    """Counts, per optimizer, the steps taken on gradients left from the step before."""

    def __init__(self) -> None:
        self._by_optimizer: dict[int, _Interval] = {}

    def zero_grad(self, optimizer: Any) -> None:
        interval = self._interval(optimizer)
        interval.cleared = True
        interval.backward_since_clear = False

    def module_zero_grad(self) -> None:
        # A model's zero_grad clears whichever optimizer holds its parameters.
        for interval in self._by_optimizer.values():
            interval.cleared = True
            interval.backward_since_clear = False

    def before_backward(self, optimizers: list[Any]) -> None:
        """The first backward after a step: gradients cleared by hand are empty now."""
        for optimizer in optimizers:
            self._interval(optimizer).backward_since_clear = True
        for optimizer in optimizers:
            interval = self._by_optimizer.get(id(optimizer))
            if interval is None or interval.steps == 0 or interval.cleared:
                continue
            if interval.slate_checked or not self._sampled(interval.steps):
                continue
            interval.slate_checked = True
            interval.cleared = _gradients_empty(optimizer)

    def before_step(self, optimizer: Any, closure: bool = False) -> None:
        """``closure``: the step was given one (LBFGS), which clears and runs backward itself."""
        interval = self._interval(optimizer)
        if not closure and self._sampled(interval.steps + 1):
            interval.order_checked += 1
            if not interval.backward_since_clear and _gradients_empty(optimizer):
                interval.stepped_cleared += 1
        if interval.steps > 0 and (interval.cleared or interval.slate_checked):
            interval.checked += 1
            interval.uncleared += not interval.cleared
        interval.steps += 1
        interval.cleared = False
        interval.slate_checked = False

    def counts(self) -> tuple[int, int]:
        """(checked, uncleared) for the optimizer that stepped most."""
        if not self._by_optimizer:
            return 0, 0
        busiest = max(self._by_optimizer.values(), key=lambda i: i.steps)
        return busiest.checked, busiest.uncleared

    def order_counts(self) -> tuple[int, int, int | None]:
        """(checked, taken on cleared gradients, the optimizer's id) for the optimizer whose
        steps most often found cleared gradients: in a GAN one optimizer's loop can be out of
        order alone."""
        if not self._by_optimizer:
            return 0, 0, None
        key, worst = max(
            self._by_optimizer.items(),
            key=lambda item: (
                item[1].stepped_cleared / max(item[1].order_checked, 1),
                item[1].steps,
            ),
        )
        return worst.order_checked, worst.stepped_cleared, key

    def _interval(self, optimizer: Any) -> _Interval:
        return self._by_optimizer.setdefault(id(optimizer), _Interval())

    @staticmethod
    def _sampled(steps: int) -> bool:
        return steps <= _CHECK_FIRST or steps % _CHECK_EVERY == 0


def _gradients_empty(optimizer: Any) -> bool:
    grads = [
        p.grad
        for group in optimizer.param_groups
        for p in group["params"]
        if isinstance(p, torch.Tensor) and p.grad is not None
    ]
    if not grads:
        return True
    with torch.no_grad():
        norms = torch._foreach_norm([g.detach() for g in grads if not g.is_sparse])
        return not norms or float(torch.stack([n.float() for n in norms]).max()) == 0.0
