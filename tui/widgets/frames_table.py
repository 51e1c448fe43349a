"""The frames before the event: one row per module call, the producer highlighted."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual import on, work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.worker import get_current_worker

from diagnose.render.numbers import producer_frame, stats_of
from diagnose.report import Event, Frame
from tui.frame_refs import no_marked_rows
from tui.text import Palette, literal, stat_cell

COLUMNS = ("", "#", "step", "module", "type", "phase", "dtype", "|x| min", "|x| max", "headroom")
CHUNK = 500  # rows added per message, so a 10 000-frame report never freezes the screen


class FramesTable(DataTable):
    """DataTable of frames numbered 1..N in its ``#`` column; ``n`` / ``N`` jump between the
    non-finite rows and the producer, or say where the event was when no row is marked."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="frames.down"),
        Binding("k", "cursor_up", "Up", show=False, id="frames.up"),
        Binding("n", "next_nonfinite", "Next inf/nan", id="frames.next"),
        Binding("N", "previous_nonfinite", "Prev inf/nan", id="frames.prev"),
        Binding("enter", "select_cursor", "Details", id="frames.details"),
    ]

    loaded: reactive[bool] = reactive(False, init=False)
    """All rows are in the table; the cursor is then put on the producer."""

    @dataclass
    class RowsBuilt(Message):
        """A chunk of row cells built by the loading worker; ``last`` closes the load."""

        rows: list[list[Text]]
        last: bool = False

    def __init__(self, frames: Sequence[Frame], event: Event | None = None, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.frames = frames
        self.event = event
        producer = producer_frame(frames)
        self.producer = next((i for i, f in enumerate(frames) if f is producer), None)
        self.nonfinite_rows = [
            i for i, f in enumerate(frames) if not f.finite or i == self.producer
        ]

    def on_mount(self) -> None:
        for label in COLUMNS:
            justify = (
                "right" if label.startswith(("|", "head")) or label in ("#", "step") else "left"
            )
            self.add_column(Text(label, justify=justify), key=label or "mark")
        self._load(Palette.from_app(self.app))

    @work(thread=True, exclusive=True, group="frames")
    def _load(self, palette: Palette) -> None:
        """Build the row cells off the UI thread and post them in chunks."""
        worker = get_current_worker()
        chunk: list[list[Text]] = []
        for row in self._rows(palette):
            if worker.is_cancelled:
                return
            chunk.append(row)
            if len(chunk) == CHUNK:
                self.post_message(self.RowsBuilt(chunk))
                chunk = []
        self.post_message(self.RowsBuilt(chunk, last=True))

    @on(RowsBuilt)
    def _add_built_rows(self, message: RowsBuilt) -> None:
        self.add_rows(message.rows)
        if message.last:
            self.loaded = True

    def watch_loaded(self, loaded: bool) -> None:
        if loaded and self.producer is not None:
            self.move_cursor(row=self.producer, animate=False, scroll=True)

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
                Text(str(i + 1), style="dim", justify="right"),
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
            self.app.notify(no_marked_rows(self.event, self.frames), markup=False)
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
