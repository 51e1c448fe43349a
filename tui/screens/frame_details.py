"""One frame in full: every input, output and weight with its statistics."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from diagnose.report import Frame, TensorStats
from tui.text import Palette, literal, stat_cell

COLUMNS = ("role", "name", "dtype", "shape", "|x| min", "|x| max", "nan", "inf", "headroom")


class FrameDetailsScreen(ModalScreen[None]):
    """Pushed by enter on a frame row; escape or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="details.close"),
        Binding("j", "scroll_table(1)", "Down", show=False, id="details.down"),
        Binding("k", "scroll_table(-1)", "Up", show=False, id="details.up"),
    ]

    def __init__(self, frame: Frame) -> None:
        super().__init__()
        self.frame = frame

    def compose(self) -> ComposeResult:
        frame = self.frame
        title = Text.assemble(
            ("Frame ", "bold"),
            str(frame.index),
            "  ",
            literal(frame.module or "-", "bold"),
            " (",
            literal(frame.module_type or "?"),
            ")  step ",
            "-" if frame.step is None else str(frame.step),
            "  ",
            literal(frame.phase or "-"),
        )
        if frame.producer:
            title.append("  ▶ producer of the event", style="bold")
        with Vertical(id="details-box"):
            yield Label(title, id="details-title")
            yield DataTable(id="details-table", cursor_type="row", zebra_stripes=True)
            yield Label(Text("escape: close", style="dim"))

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
        table.focus()

    def action_scroll_table(self, delta: int) -> None:
        table = self.query_one(DataTable)
        table.move_cursor(row=table.cursor_row + delta)


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
