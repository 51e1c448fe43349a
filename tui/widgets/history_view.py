"""The per-step history: loss, grad norm, largest |activation| and loss scale."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from diagnose.render.learning import learning_evidence
from diagnose.report import Report
from tui.text import literal, plural
from tui.widgets.step_plot import StepPlot

SERIES = (
    ("loss", "loss"),
    ("grad_norm", "grad norm"),
    ("max_activation", "largest |activation| (steps traced in detail)"),
    ("max_output", "largest |model output|"),
    ("loss_scale", "loss scale"),
    ("lr", "learning rate"),
)


class HistoryView(VerticalScroll):
    """One plot per series that the run recorded; series with no values are left out."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "Down", show=False, id="history.down"),
        Binding("k", "scroll_up", "Up", show=False, id="history.up"),
    ]

    def __init__(self, report: Report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report

    def compose(self) -> ComposeResult:
        history = self.report.history
        event = self.report.event
        event_step = event.step if event is not None else None
        evidence = learning_evidence(self.report)
        if evidence is not None:
            yield Static(_learning(evidence.lines()), id="learning-evidence")
        if not history:
            yield Static(Text("No per-step history in this report.", style="dim"))
            return
        steps = [h.step for h in history]
        for attr, title in SERIES:
            values = [getattr(h, attr) for h in history]
            if all(v is None for v in values):
                continue
            if attr == "lr" and len({v for v in values if v is not None}) <= 1:
                continue  # a constant lr is in the Config tab; a plot of it says nothing
            yield StepPlot(title, steps, values, event_step=event_step, id=f"plot-{attr}")
        notes = _notes(self.report)
        if notes:
            yield Static(notes, id="history-notes")


def _learning(lines: list[str]) -> Text:
    """What the curves show about learning, above the plots (the lines are the text report's)."""
    text = Text("Learning\n", style="bold")
    text.append_text(Text("\n").join(literal(line) for line in lines))
    return text


def _notes(report: Report) -> Text:
    skipped = [h.step for h in report.history if h.skipped]
    near = [h.step for h in report.history if h.near_limit]
    text = Text()
    if skipped:
        text.append(f"GradScaler skipped {plural(len(skipped), 'step')}: {_steps(skipped)}\n")
    if near:
        text.append(f"near the dtype's limit at {plural(len(near), 'step')}: {_steps(near)}\n")
    text.rstrip()
    return text


def _steps(steps: list[int]) -> str:
    shown = ", ".join(map(str, steps[:12]))
    return shown + (f", … (+{len(steps) - 12})" if len(steps) > 12 else "")
