"""A small bar plot of one per-step series with the event step marked.

Textual's Sparkline has no axis, no log scale and no marker; the trend of a series against the
event step is what tells a too-high learning rate from an fp16 overflow, so this draws both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from tui.text import Palette, num

BLOCKS = " ▁▂▃▄▅▆▇█"
LABEL_WIDTH = 8


class StepPlot(Widget):
    """Bars per step (bucketed to the width), log-scaled when the series spans decades."""

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
        return max(finite) / min(finite) > 1e3

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
    scale = _scaler(lo, hi, log)
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
            cells.append((max(1, round(scale(top) * rows * 8)), ""))
    event_bucket = _column_of(buckets, event_step)
    for r in range(rows):
        label = num(_inverse(lo, hi, log, 1 - r / max(rows - 1, 1))) if r in (0, rows - 1) else ""
        out.append(f"{label:>{LABEL_WIDTH - 1}} ", style="dim")
        level_base = (rows - 1 - r) * 8
        for b, (eighths, flag) in enumerate(cells):
            style = event_style if b == event_bucket else bar_style
            if eighths is None:
                char, style = (flag if r == 0 else " "), (event_style if flag == "✗" else "")
            else:
                char = BLOCKS[min(max(eighths - level_base, 0), 8)]
            out.append(char * repeat, style=style)
        out.append("\n")
    axis = _axis(buckets, event_bucket, repeat, columns)
    start = len(out)
    out.append(axis, style="dim")
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


def _scaler(lo: float, hi: float, log: bool):
    if log:
        llo, lhi = math.log10(lo), math.log10(hi)
        span = (lhi - llo) or 1.0
        return lambda v: (math.log10(v) - llo) / span if v > 0 else 0.0
    span = (hi - min(lo, 0.0)) or 1.0
    base = min(lo, 0.0)
    return lambda v: (v - base) / span


def _inverse(lo: float, hi: float, log: bool, fraction: float) -> float:
    if log:
        return 10 ** (math.log10(lo) + fraction * (math.log10(hi) - math.log10(lo)))
    base = min(lo, 0.0)
    return base + fraction * (hi - base)


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
