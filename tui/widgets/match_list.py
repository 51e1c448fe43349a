"""The list of dataset records in the Matches tab, best first."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import OptionList


class MatchList(OptionList):
    """One option per matched record (score and slug); ``j`` / ``k`` move like arrows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="matches.down"),
        Binding("k", "cursor_up", "Up", show=False, id="matches.up"),
    ]
