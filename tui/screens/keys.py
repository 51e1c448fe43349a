"""Every key of the app, grouped by where it works (``?``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label


class KeysScreen(ModalScreen[None]):
    """A table of (where, key, what it does), built from the widgets' own BINDINGS."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close", id="keys.close")
    ]

    def __init__(self, sections: Sequence[tuple[str, Sequence[Binding]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with Vertical(id="keys-box"):
            yield Label(Text("Keys", style="bold"))
            yield DataTable(id="keys-table", cursor_type="row", zebra_stripes=True)
            yield Label(Text("escape: close", style="dim"))

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("where", "key", "does")
        for section, bindings in self.sections:
            for binding in bindings:
                keys = " / ".join(
                    self.app.get_key_display(Binding(k, "")) for k in binding.key.split(",")
                )
                table.add_row(section, keys, binding.description or binding.action)
        table.focus()
