"""The frames before the event: one row per module call, the producer highlighted."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from diagnose.render.numbers import stats_of
from diagnose.report import Frame
from tui.text import Palette, literal, stat_cell

COLUMNS = ("", "step", "module", "type", "phase", "dtype", "|x| min", "|x| max", "headroom")
CHUNK = 500  # rows added per message, so a 10 000-frame report never freezes the screen


class FramesTable(DataTable):
    """DataTable of frames; ``n`` / ``N`` jump between non-finite rows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("n", "next_nonfinite", "Next inf/nan", id="frames.next"),
        Binding("N", "previous_nonfinite", "Prev inf/nan", id="frames.prev"),
        Binding("enter", "select_cursor", "Details", id="frames.details"),
    ]

    class Loaded(Message):
        """All rows are in the table (the cursor has been put on the producer)."""

    def __init__(self, frames: Sequence[Frame], producer: int | None, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.frames = frames
        self.producer = producer
        self.nonfinite_rows = [i for i, f in enumerate(frames) if not f.finite]
        self.loaded = False

    def on_mount(self) -> None:
        for label in COLUMNS:
            justify = "right" if label.startswith(("|", "head")) or label == "step" else "left"
            self.add_column(Text(label, justify=justify), key=label or "mark")
        self._load(Palette.from_app(self.app))

    @work(thread=True, exclusive=True, group="frames")
    def _load(self, palette: Palette) -> None:
        """Build the row cells off the UI thread and hand them over in chunks."""
        chunk: list[list[Text]] = []
        for row in self._rows(palette):
            chunk.append(row)
            if len(chunk) == CHUNK:
                self.app.call_from_thread(self.add_rows, chunk)
                chunk = []
        self.app.call_from_thread(self._finish, chunk)

    def _finish(self, rows: list[list[Text]]) -> None:
        self.add_rows(rows)
        self.loaded = True
        if self.producer is not None:
            self.move_cursor(row=self.producer, animate=False, scroll=True)
        self.post_message(self.Loaded())

    def _rows(self, palette: Palette) -> Iterator[list[Text]]:
        producer_style = Style(bold=True, reverse=False, underline=True)
        for i, frame in enumerate(self.frames):
            out = stats_of(frame, "outputs")
            mark = Text(" ")
            if i == self.producer:
                mark = Text("▶", style=palette.bad)
            elif not frame.finite:
                mark = Text("✗", style=palette.bad)
            cells = [
                mark,
                Text("-" if frame.step is None else str(frame.step), justify="right"),
                literal(frame.module or "-"),
                literal(frame.module_type or "-"),
                literal(frame.phase or "-"),
                literal(_dtype(frame)),
                stat_cell(out, "abs_min", palette),
                stat_cell(out, "abs_max", palette),
                stat_cell(out, "headroom", palette),
            ]
            if i == self.producer:
                for cell in cells[1:]:
                    cell.stylize(producer_style)
                    cell.stylize(Style(color=palette.error))
            yield cells

    def action_next_nonfinite(self) -> None:
        self._jump(+1)

    def action_previous_nonfinite(self) -> None:
        self._jump(-1)

    def _jump(self, direction: int) -> None:
        rows = self.nonfinite_rows
        if not rows:
            self.app.notify("No non-finite frames in this report.", markup=False)
            return
        here = self.cursor_row
        if direction > 0:
            target = next((r for r in rows if r > here), rows[0])
        else:
            target = next((r for r in reversed(rows) if r < here), rows[-1])
        self.move_cursor(row=target, animate=False)

    def go_to_producer(self) -> bool:
        if self.producer is None:
            return False
        self.move_cursor(row=self.producer, animate=False)
        return True


def _dtype(frame: Frame) -> str:
    for stats in (*frame.outputs, *frame.inputs, *frame.weights):
        if stats.dtype:
            return stats.dtype
    return "-"
