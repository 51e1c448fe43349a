"""One frame in full: its row and place in the run, every input, output and weight with its
statistics, and -- for the producer -- the whole event: message, op inputs, call chain, evidence."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from diagnose.report import Event, Frame, TensorStats
from tui.event_text import event_detail
from tui.text import Palette, literal, stat_cell

COLUMNS = ("role", "name", "dtype", "shape", "|x| min", "|x| max", "nan", "inf", "headroom")


class FrameDetailsScreen(ModalScreen[None]):
    """Pushed by enter on a frame row; escape or q closes it, j / k scroll it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="details.close"),
        Binding("j", "scroll(1)", "Down", show=False, id="details.down"),
        Binding("k", "scroll(-1)", "Up", show=False, id="details.up"),
    ]

    def __init__(
        self,
        frame: Frame,
        *,
        row: int | None = None,
        rows: int | None = None,
        event: Event | None = None,
    ) -> None:
        """``row`` of ``rows``: where the Frames tab shows it; ``event``: the report's event,
        shown in full when this frame is its producer."""
        super().__init__()
        self.frame = frame
        self.row, self.rows = row, rows
        self.event = event if frame.producer else None

    def compose(self) -> ComposeResult:
        frame = self.frame
        title = Text()
        if self.row is not None:
            title.append(f"Row {self.row}" + (f" of {self.rows}" if self.rows else ""), "bold")
            title.append("  ")
        title.append_text(literal(frame.module or "-", "bold"))
        title.append(" (")
        title.append_text(literal(frame.module_type or "?"))
        title.append(")  step ")
        title.append("-" if frame.step is None else str(frame.step))
        title.append("  ")
        title.append_text(literal(frame.phase or "-"))
        title.append(f"  call {frame.index} of the run", style="dim")
        if frame.producer:
            title.append("  ▶ producer of the event", style="bold")
        with Vertical(id="details-box"):
            yield Static(title, id="details-title")
            with VerticalScroll(id="details-scroll"):
                yield DataTable(id="details-table", cursor_type="none", zebra_stripes=True)
                if self.event is not None:
                    yield Static(
                        event_detail(self.event, Palette.from_app(self.app)), id="details-event"
                    )
            yield Label(Text("escape: close · j/k: scroll · ←/→: the table's columns", style="dim"))

    def on_mount(self) -> None:
        palette = Palette.from_app(self.app)
        table = self.query_one(DataTable)
        for label in COLUMNS:
            table.add_column(label, key=label)
        for role, items in (
            ("input", self.frame.inputs),
            ("output", self.frame.outputs),
            ("weight", self.frame.weights),
        ):
            for stats in items:
                table.add_row(*_cells(role, stats, palette))
        if table.row_count == 0:
            table.add_row(Text("(no tensors recorded for this frame)"), *[""] * 8)
        table.focus()  # left / right scroll a table wider than the box

    def action_scroll(self, delta: int) -> None:
        scroll = self.query_one("#details-scroll", VerticalScroll)
        scroll.scroll_relative(y=delta, animate=False)


def _cells(role: str, stats: TensorStats, palette: Palette) -> list[Text]:
    def count(n: int | None) -> Text:
        style = palette.bad if n else ""
        return Text("-" if n is None else str(n), style=style, justify="right")

    return [
        Text(role),
        literal(stats.name),
        literal(stats.dtype or "-"),
        Text("×".join(map(str, stats.shape)) or "scalar"),
        stat_cell(stats, "abs_min", palette),
        stat_cell(stats, "abs_max", palette),
        count(stats.nan),
        count(stats.inf),
        stat_cell(stats, "headroom", palette),
    ]
