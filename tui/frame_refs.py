"""How the other views name a row of the Frames tab, and what ``n`` says when no row is marked.

The Frames tab numbers its rows 1..N in its ``#`` column; a frame's ``index`` is its place in the
run's whole sequence of calls, which a table holding only the last calls does not show. So every
reference into the table is a row number, with the step and module to recognise it by.
"""

from __future__ import annotations

from collections.abc import Sequence

from diagnose.report import Event, Frame
from diagnose.safetext import one_line


def row_of(frames: Sequence[Frame], frame: Frame) -> int:
    """The 1-based row number the Frames tab shows for ``frame``."""
    return next(i for i, f in enumerate(frames) if f is frame) + 1


def row_ref(frames: Sequence[Frame], frame: Frame) -> str:
    """'row 9 of 11 (step 37, model.2)': the row as the table numbers and shows it."""
    parts = []
    if frame.step is not None:
        parts.append(f"step {frame.step}")
    if frame.module or frame.module_type:
        parts.append(one_line(frame.module or frame.module_type))
    where = f" ({', '.join(parts)})" if parts else ""
    return f"row {row_of(frames, frame)} of {len(frames)}{where}"


def no_marked_rows(event: Event | None, frames: Sequence[Frame]) -> str:
    """What ``n`` / ``N`` say in a table with no non-finite row and no producer: where the
    event was instead, for each kind of event, and what the rows are."""
    rows = f"{len(frames)} row{'s' * (len(frames) != 1)}"
    if not frames:
        return "This report recorded no frames."
    if event is None:
        return f"No row is non-finite: the run stayed finite; the {rows} are its last calls."
    if event.kind == "exception":
        kind = one_line(event.exception_type or "an exception")
        return (
            f"No row is non-finite: the run raised {kind}, not an inf/nan; "
            f"the {rows} are the calls before it (the Matches tab has the exception)."
        )
    module = f" of {one_line(event.module)}" if event.module else ""
    if event.phase == "backward":
        return (
            f"No row is non-finite: the inf/nan was born in the backward pass{module}, and "
            f"gradients are not rows here; the {rows} are the forward calls before it, all "
            "finite. The Walkthrough's 'Where it was born' has the op and its inputs."
        )
    if event.phase == "optimizer":
        return (
            "No row is non-finite: the inf/nan was born in the optimizer step, which no module "
            f"call makes; the {rows} are the finite calls before it. The Walkthrough's "
            "'Where it was born' has the optimizer's line, the Config tab its settings."
        )
    phase = f" in {one_line(event.phase)}" if event.phase else ""
    return (
        f"No row is non-finite: the inf/nan was caught{phase} outside any recorded call; "
        f"the {rows} before it stayed finite."
    )
