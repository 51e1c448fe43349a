"""The Config tab: the training config in sections, each value beside where it came from."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from diagnose.report import Report
from tui.config_text import config_sections


class ConfigView(VerticalScroll, can_focus=True):
    """A scrolling page of sections (``tui.config_text``); j / k scroll it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "scroll_down", "Down", show=False, id="config.down"),
        Binding("k", "scroll_up", "Up", show=False, id="config.up"),
    ]

    def __init__(self, report: Report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report

    def compose(self) -> ComposeResult:
        for section in config_sections(self.report):
            yield Static(Text(section.title, style="bold underline"), classes="config-title")
            yield Static(section.renderable(), classes="config-section")
