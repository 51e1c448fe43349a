"""The walkthrough tab: one step at a time, space/enter for the next."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Label, Static

from diagnose.report import Report
from tui.text import Palette
from tui.walkthrough import Step, build_steps


class WalkthroughView(VerticalScroll, can_focus=True):
    """A focusable pane; its keys move through the steps built from the report."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space,enter", "next", "Next", id="walk.next"),
        Binding("backspace,b", "previous", "Back", id="walk.back"),
        Binding("o", "open", "Open view", id="walk.open"),
        Binding("j", "scroll_down", "Down", show=False, id="walk.down"),
        Binding("k", "scroll_up", "Up", show=False, id="walk.up"),
    ]

    index: reactive[int] = reactive(0)

    @dataclass
    class Open(Message):
        """Show ``tab`` (the view that holds this step in full)."""

        tab: str

    def __init__(self, report: Report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report
        self.steps: list[Step] = []

    def compose(self) -> ComposeResult:
        self.steps = build_steps(self.report, Palette.from_app(self.app))
        yield Label(id="walk-title")
        yield Static(id="walk-body")

    @property
    def step(self) -> Step:
        return self.steps[self.index]

    def watch_index(self) -> None:
        step = self.step
        title = Text(f"Step {self.index + 1} of {len(self.steps)} · ", style="dim")
        title.append(step.title, style="bold")
        hint = "space: next" if self.index < len(self.steps) - 1 else "the end"
        title.append(f"   ({hint}, b: back{', o: open view' if step.tab else ''})", style="dim")
        self.query_one("#walk-title", Label).update(title)
        self.query_one("#walk-body", Static).update(step.body)
        self.scroll_home(animate=False)

    def action_next(self) -> None:
        if self.index < len(self.steps) - 1:
            self.index += 1

    def action_previous(self) -> None:
        if self.index > 0:
            self.index -= 1

    def action_open(self) -> None:
        if self.step.tab:
            self.post_message(self.Open(self.step.tab))
        else:
            self.app.notify("This step has no other view.", markup=False)
