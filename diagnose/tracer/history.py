"""The per-step history of a run, kept in bounded memory however long the run is.

Every step is kept as it was for the first ``first`` steps and for the last ``last`` steps
(those before the event or the end: what the rules read), and the steps between are folded
into at most ``buckets`` summary rows of equal span (mean loss and gradient norm, their
extremes, the largest activation and model output, skipped and near-limit counts). When the middle outgrows
the buckets, neighbouring buckets merge and the span doubles, so memory and the report's
size stay bounded: a million steps cost what a few thousand do. A run shorter than
``first + last + buckets`` steps loses nothing (each bucket holds one step, shown as is).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from diagnose.report import HistoryNote, StepRecord, StepSummary

ROW_FIELDS = (
    "step",
    "loss",
    "grad_norm",
    "max_activation",
    "lr",
    "loss_scale",
    "skipped",
    "near_limit",
    "detailed",
    "max_output",
)
FIRST_KEPT = 1000
LAST_KEPT = 1000
MAX_BUCKETS = 250


class _Bucket:
    """Running aggregates of consecutive history rows."""

    __slots__ = (
        "act",
        "count",
        "detailed",
        "first",
        "gn_bad",
        "gn_max",
        "gn_n",
        "gn_sum",
        "last",
        "loss_max",
        "loss_min",
        "loss_n",
        "loss_sum",
        "lr",
        "near",
        "out",
        "row",
        "scale_max",
        "scale_min",
        "skipped",
    )

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.first = row[0]
        self.count = 0
        self.loss_sum = self.gn_sum = 0.0
        self.loss_n = self.gn_n = self.skipped = self.near = 0
        self.loss_min = self.loss_max = self.gn_max = self.act = self.out = None
        self.gn_bad: float | None = None  # nan, else inf, when a step's norm was non-finite
        self.scale_min = self.scale_max = self.lr = None
        self.detailed = True
        self.row = row  # the only row while count == 1
        self.add(row)

    def add(self, row: tuple[Any, ...]) -> None:
        _, loss, grad_norm, activation, lr, scale, skipped, near, detailed, output = row
        self.last = row[0]
        self.count += 1
        if _finite(loss):
            self.loss_sum += loss
            self.loss_n += 1
            self.loss_min = loss if self.loss_min is None else min(self.loss_min, loss)
            self.loss_max = loss if self.loss_max is None else max(self.loss_max, loss)
        if _finite(grad_norm):
            self.gn_sum += grad_norm
            self.gn_n += 1
            self.gn_max = grad_norm if self.gn_max is None else max(self.gn_max, grad_norm)
        elif isinstance(grad_norm, float):
            self.gn_bad = _worse(self.gn_bad, grad_norm)
        if isinstance(activation, float):
            self.act = activation if self.act is None else _larger(self.act, activation)
        if isinstance(output, float):
            self.out = output if self.out is None else _larger(self.out, output)
        if lr is not None:
            self.lr = lr
        if scale is not None:
            self.scale_min = scale if self.scale_min is None else min(self.scale_min, scale)
            self.scale_max = scale if self.scale_max is None else max(self.scale_max, scale)
        self.skipped += bool(skipped)
        self.near += bool(near)
        self.detailed = self.detailed and bool(detailed)

    def merge(self, other: _Bucket) -> None:
        """Fold ``other`` (the steps right after this bucket's) into this bucket."""
        self.last = other.last
        self.count += other.count
        self.loss_sum += other.loss_sum
        self.loss_n += other.loss_n
        self.loss_min = _opt(min, self.loss_min, other.loss_min)
        self.loss_max = _opt(max, self.loss_max, other.loss_max)
        self.gn_sum += other.gn_sum
        self.gn_n += other.gn_n
        self.gn_max = _opt(max, self.gn_max, other.gn_max)
        if other.gn_bad is not None:
            self.gn_bad = _worse(self.gn_bad, other.gn_bad)
        self.act = _opt(_larger, self.act, other.act)
        self.out = _opt(_larger, self.out, other.out)
        self.lr = other.lr if other.lr is not None else self.lr
        self.scale_min = _opt(min, self.scale_min, other.scale_min)
        self.scale_max = _opt(max, self.scale_max, other.scale_max)
        self.skipped += other.skipped
        self.near += other.near
        self.detailed = self.detailed and other.detailed

    def record(self) -> StepRecord:
        if self.count == 1:
            return _plain(self.row)
        summary = StepSummary.model_construct(
            last_step=self.last,
            steps=self.count,
            loss_min=self.loss_min,
            loss_max=self.loss_max,
            grad_norm_max=self.gn_bad if self.gn_bad is not None else self.gn_max,
            loss_scale_max=self.scale_max,
            skipped_steps=self.skipped,
            near_limit_steps=self.near,
        )
        return StepRecord.model_construct(
            step=self.first,
            loss=self.loss_sum / self.loss_n if self.loss_n else None,
            grad_norm=self.gn_sum / self.gn_n if self.gn_n else None,
            max_activation=self.act,
            max_output=self.out,
            lr=self.lr,
            loss_scale=self.scale_min,
            skipped=self.skipped > 0,
            near_limit=self.near > 0,
            detailed=self.detailed,
            summary=summary,
        )


class StepHistory:
    """Rows appended one per step (plain tuples in ``ROW_FIELDS`` order, cheap to append),
    read as StepRecords. ``len()`` is the number of steps appended, not of rows kept."""

    def __init__(
        self, first: int = FIRST_KEPT, last: int = LAST_KEPT, buckets: int = MAX_BUCKETS
    ) -> None:
        if first < 1 or last < 1 or buckets < 2:
            raise ValueError("first and last must be at least 1 and buckets at least 2")
        self.first, self.last, self.buckets = first, last, buckets
        self._head: list[tuple[Any, ...]] = []
        self._tail: deque[tuple[Any, ...]] = deque()
        self._middle: list[_Bucket] = []
        self._span = 1  # steps per full bucket
        self._steps = 0
        self._built: list[StepRecord] | None = None
        self._head_built: list[StepRecord] = []

    def __len__(self) -> int:
        return self._steps

    def append(self, row: tuple[Any, ...]) -> None:
        self._steps += 1
        self._built = None
        if len(self._head) < self.first:
            self._head.append(row)
            return
        tail = self._tail
        tail.append(row)
        if len(tail) > self.last:
            self._fold(tail.popleft())

    def _fold(self, row: tuple[Any, ...]) -> None:
        middle = self._middle
        if middle and middle[-1].count < self._span:
            middle[-1].add(row)
            return
        middle.append(_Bucket(row))
        if len(middle) > self.buckets:
            merged = []
            for i in range(0, len(middle) - 1, 2):
                middle[i].merge(middle[i + 1])
                merged.append(middle[i])
            if len(middle) % 2:
                merged.append(middle[-1])
            self._middle = merged
            self._span *= 2

    def records(self) -> list[StepRecord]:
        """Every row as a StepRecord, oldest first (built once per change)."""
        if self._built is None:
            head_built = self._head_built
            for row in self._head[len(head_built) :]:
                head_built.append(_plain(row))
            self._built = [
                *head_built,
                *(b.record() for b in self._middle),
                *map(_plain, self._tail),
            ]
        return self._built

    def note(self) -> HistoryNote | None:
        """What the report says when some steps are summarised; None when all are kept."""
        summarized = sum(b.count for b in self._middle if b.count > 1)
        if not summarized:
            return None
        return HistoryNote(
            steps=self._steps,
            first_kept=len(self._head),
            last_kept=len(self._tail),
            summarized=summarized,
            message=(
                f"history of {self._steps} steps: the first {len(self._head)} and the "
                f"last {len(self._tail)} are kept step by step; the steps between are "
                f"summarised, {self._span} steps or fewer a row"
            ),
        )


def _plain(row: tuple[Any, ...]) -> StepRecord:
    # The tracer's own floats and bools: not validated again.
    return StepRecord.model_construct(**dict(zip(ROW_FIELDS, row, strict=True)))


def _finite(value: Any) -> bool:
    return isinstance(value, float | int) and not isinstance(value, bool) and math.isfinite(value)


def _worse(a: float | None, b: float) -> float:
    """nan over inf: the more alarming of two non-finite values."""
    if a is None:
        return b
    return a if math.isnan(a) else b


def _larger(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return max(a, b)


def _opt(pick: Any, a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return pick(a, b)
