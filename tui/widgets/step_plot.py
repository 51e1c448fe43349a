"""A small plot of one per-step series with the event step marked.

Textual's Sparkline has no axis, no log scale and no marker; the trend of a series against the
event step is what tells a too-high learning rate from an fp16 overflow, so this draws both.
A series that spans decades is drawn on a log axis; one whose axis does not start at 0 (a log
axis, or a loss that stays within a narrow band far from 0) is drawn as a line, since bars
filled up from an axis's arbitrary bottom would make a solid block of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from tui.text import Palette, num

BLOCKS = " ▁▂▃▄▅▆▇█"
LABEL_WIDTH = 8
LOG_RATIO = 100.0  # max / min of a positive series from which a log axis reads better
NARROW = 0.5  # a positive series whose range is under this share of its max: axis from its min


class StepPlot(Widget):
    """Bars (or a line) per step, bucketed to the width; log-scaled when the series spans
    two decades or more."""

    event_step: reactive[int | None] = reactive(None)

    def __init__(
        self,
        title: str,
        steps: Sequence[int],
        values: Sequence[float | None],
        *,
        event_step: int | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.title = title
        self.steps = list(steps)
        self.values = list(values)
        self.set_reactive(StepPlot.event_step, event_step)

    @property
    def log_scale(self) -> bool:
        finite = [v for v in self.values if v is not None and math.isfinite(v)]
        if not finite or min(finite) <= 0:
            return False
        return max(finite) / min(finite) >= LOG_RATIO

    def render(self) -> Text:
        palette = Palette.from_app(self.app)
        width, height = self.size.width, self.size.height
        return render_plot(
            self.title,
            self.steps,
            self.values,
            self.event_step,
            width=max(width, LABEL_WIDTH + 4),
            height=max(height, 3),
            palette=palette,
            log=self.log_scale,
        )


def render_plot(
    title: str,
    steps: list[int],
    values: list[float | None],
    event_step: int | None,
    *,
    width: int,
    height: int,
    palette: Palette,
    log: bool,
) -> Text:
    """The whole plot as text: a title line, bar rows, and an axis line with the marker."""
    rows = height - 2
    columns = width - LABEL_WIDTH
    points: list[tuple[int, float | None]] = list(zip(steps, values, strict=False))
    if event_step is not None and (not steps or event_step > steps[-1]):
        points.append((event_step, math.inf))  # the step the run did not finish
    out = Text(no_wrap=True, overflow="crop")
    out.append(_title_line(title, values, log, event_step))
    out.append("\n")
    if not points:
        out.append("no steps recorded".center(width), style="dim")
        return out
    buckets = _bucket(points, columns)
    repeat = max(1, min(columns // len(buckets), 4))  # few steps: wider bars, not a sliver
    finite = [v for _, v in points if v is not None and math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    axis = Axis.of(lo, hi, log)
    bar_style = Style(color=palette.accent)
    event_style = Style(color=palette.error, bold=True)
    cells: list[tuple[int | None, str]] = []  # per bucket: eighths filled, or a flag char
    for bucket in buckets:
        vals = [v for _, v in bucket]
        if any(v is not None and not math.isfinite(v) for v in vals):
            cells.append((None, "✗"))
        elif all(v is None for v in vals):
            cells.append((None, " "))
        else:
            top = max(v for v in vals if v is not None)
            cells.append((max(1, round(axis.fraction(top) * rows * 8)), ""))
    event_bucket = _column_of(buckets, event_step)
    for r in range(rows):
        label = num(axis.value(1 - r / max(rows - 1, 1))) if r in (0, rows - 1) else ""
        out.append(f"{label:>{LABEL_WIDTH - 1}} ", style="dim")
        level_base = (rows - 1 - r) * 8
        for b, (eighths, flag) in enumerate(cells):
            style = event_style if b == event_bucket else bar_style
            if eighths is None:
                char, style = (flag if r == 0 else " "), (event_style if flag == "✗" else "")
            elif axis.line:  # only the cell the value is in: a line, not a solid block
                level = eighths - level_base
                char = BLOCKS[level] if 0 < level <= 8 else " "
            else:
                char = BLOCKS[min(max(eighths - level_base, 0), 8)]
            out.append(char * repeat, style=style)
        out.append("\n")
    axis_line = _axis(buckets, event_bucket, repeat, columns)
    start = len(out)
    out.append(axis_line, style="dim")
    if event_bucket is not None:
        at = start + LABEL_WIDTH + event_bucket * repeat
        out.stylize(event_style, at, at + repeat)
    return out


def _title_line(title: str, values: list[float | None], log: bool, event_step: int | None) -> Text:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    line = Text(title, style="bold")
    if finite:
        line.append(f"  first {num(finite[0])}  last {num(finite[-1])}  max {num(max(finite))}")
    if any(v is not None and not math.isfinite(v) for v in values):
        line.append("  has inf/nan", style="bold")
    if log:
        line.append("  (log scale)", style="dim")
    if event_step is not None:
        line.append(f"  ✗ event at step {event_step}", style="bold")
    return line


def _bucket(points: list[tuple[int, float | None]], columns: int) -> list[list]:
    """Group points into at most ``columns`` columns, in order; each keeps its steps."""
    n = len(points)
    if n <= columns:
        return [[p] for p in points]
    return [points[i * n // columns : (i + 1) * n // columns] for i in range(columns)]


def _column_of(buckets: list[list], step: int | None) -> int | None:
    if step is None:
        return None
    for c, bucket in enumerate(buckets):
        if any(s == step for s, _ in bucket):
            return c
    return None


@dataclass(frozen=True)
class Axis:
    """The vertical axis: from ``base`` to ``top``, linear or log; ``line`` when it does not
    start at 0, so bars filled from its bottom would say nothing."""

    base: float
    top: float
    log: bool
    line: bool

    @classmethod
    def of(cls, lo: float, hi: float, log: bool) -> Axis:
        if log:
            return cls(lo, hi, True, True)
        if lo > 0 and hi - lo < NARROW * hi:  # a band far from 0: the axis spans the band
            pad = (hi - lo) * 0.1 or abs(hi) * 0.1 or 1.0
            return cls(lo - pad, hi + (pad if hi == lo else 0.0), False, True)
        return cls(min(lo, 0.0), hi, False, False)

    def fraction(self, v: float) -> float:
        """Where ``v`` is on the axis, 0 at the bottom and 1 at the top."""
        if self.log:
            low, span = math.log10(self.base), math.log10(self.top) - math.log10(self.base)
            return (math.log10(v) - low) / (span or 1.0) if v > 0 else 0.0
        return (v - self.base) / ((self.top - self.base) or 1.0)

    def value(self, fraction: float) -> float:
        """The value at ``fraction`` of the axis (for its labels)."""
        if self.log:
            low, high = math.log10(self.base), math.log10(self.top)
            return 10 ** (low + fraction * (high - low))
        return self.base + fraction * (self.top - self.base)


def _axis(buckets: list[list], event_bucket: int | None, repeat: int, columns: int) -> str:
    """'step 0 ... 37' under the bars, with ▲ under the event step."""
    used = min(len(buckets) * repeat, columns)
    axis = [" "] * used
    left, right = f"step {buckets[0][0][0]}", f"{buckets[-1][-1][0]}"
    for i, ch in enumerate(left[:used]):
        axis[i] = ch
    start = used - len(right)
    if event_bucket is not None:
        at = event_bucket * repeat
        axis[at : at + repeat] = "▲" * repeat
        if start < at + repeat:  # the number would cover the marker: put it before it
            start = at - len(right) - 1
    if start > len(left):
        axis[start : start + len(right)] = right
    return " " * LABEL_WIDTH + "".join(axis)
