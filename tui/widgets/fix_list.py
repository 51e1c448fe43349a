"""The list of fixes in the Fixes tab, best first."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import OptionList


class FixList(OptionList):
    """One option per fix (score, verification mark, title); ``j`` / ``k`` move like arrows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="fixes.down"),
        Binding("k", "cursor_up", "Up", show=False, id="fixes.up"),
        Binding("enter", "select", "Details", id="fixes.details"),
    ]
