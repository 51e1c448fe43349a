"""One fix in full, the width of the screen: everything the Fixes tab's side pane shows,
for a terminal where that pane is narrow."""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from diagnose.report import Fix
from tui.text import Palette
from tui.widgets.fixes_view import FixesView, fix_detail  # the side pane's text


class FixDetailsScreen(ModalScreen[None]):
    """Pushed by enter on a fix; escape or q closes it, j / k scroll it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="fix-details.close"),
        Binding("j", "scroll(1)", "Down", show=False, id="fix-details.down"),
        Binding("k", "scroll(-1)", "Up", show=False, id="fix-details.up"),
        # the keys the detail's last line names work here too
        Binding("c", "request('copy')", "Copy", id="fix-details.copy"),
        Binding("a", "request('apply')", "Apply", id="fix-details.apply"),
        Binding("v", "request('verify')", "Verify", id="fix-details.verify"),
    ]

    def __init__(self, fix: Fix, *, rank: int, of: int) -> None:
        super().__init__()
        self.fix, self.rank, self.of = fix, rank, of

    def compose(self) -> ComposeResult:
        with Vertical(id="fix-details-box"):
            yield Label(Text(f"Fix {self.rank} of {self.of}", style="bold"))
            with VerticalScroll(id="fix-details-scroll"):
                yield Static(fix_detail(self.fix, Palette.from_app(self.app)), id="fix-details")
            yield Label(Text("escape: close · j/k: scroll", style="dim"))

    def on_mount(self) -> None:
        self.query_one("#fix-details-scroll").focus()

    def action_request(self, action: Literal["copy", "apply", "verify"]) -> None:
        """As the Fixes tab's keys: the app copies, asks to apply, or verifies (its progress
        shows in the Fixes tab, so verify closes this)."""
        self.app.post_message(FixesView.Requested(action, self.fix))
        if action == "verify":
            self.dismiss()

    def action_scroll(self, delta: int) -> None:
        self.query_one("#fix-details-scroll", VerticalScroll).scroll_relative(
            y=delta, animate=False
        )
