"""One-line summaries of a report shared by the verdict and the walkthrough."""

from __future__ import annotations

from rich.text import Text

from diagnose.render.numbers import (
    diverging_note,
    exit_note,
    learning_note,
    stopped_note,
    untrained_note,
)
from diagnose.report import Fix, Report, Symptom
from tui.text import Palette, literal, num


def top_symptom(report: Report) -> Symptom | None:
    """The likely cause, as the text report names it: the first symptom (the core ranks them)."""
    return report.symptoms[0] if report.symptoms else None


def top_fix(report: Report) -> Fix | None:
    return report.fixes[0] if report.fixes else None


def _finite(report: Report, palette: Palette) -> Text:
    """A run that stayed finite: clean, or not learning (and why)."""
    learned = learning_note(report)
    if learned is not None and learned.broken:
        text = Text.assemble(("✗ NOT LEARNING", _bold(palette.error)), "  ")
        text.append_text(literal(learned.headline))
        return text
    steps = report.steps_recorded
    text = Text.assemble(
        ("✓ CLEAN", _bold(palette.success)),
        f"  no inf/nan and no exception in {steps} step{'s' * (steps != 1)}",
    )
    exited = exit_note(report)
    if exited:
        text.append(f"; but {exited}", style=palette.warning)
    note = diverging_note(report)
    if note:
        text.append(f"; but {note}", style=palette.warning)
    if learned is not None:
        text.append("; but ", style=palette.warning)
        text.append_text(literal(learned.headline))
    return text


def headline(report: Report, palette: Palette) -> Text:
    """Status and where: '✗ NON-FINITE inf born at step 37 in forward'."""
    event = report.event
    if report.status == "interrupted" and event is None:
        text = Text.assemble(("⏸ INTERRUPTED", _bold(palette.warning)), "  ")
        text.append_text(literal(stopped_note(report) or "the run was stopped"))
        return text
    if report.status == "untrained":
        text = Text.assemble(("○ UNTRAINED", _bold(palette.warning)), "  ")
        text.append_text(literal(untrained_note(report)))
        return text
    if report.status in ("clean", "silent"):
        return _finite(report, palette)
    if report.status == "exception" or (event is not None and event.kind == "exception"):
        kind = literal(event.exception_type if event and event.exception_type else "exception")
        text = Text.assemble(("✗ EXCEPTION ", _bold(palette.error)), kind)
        if event is not None and event.step is not None:
            text.append(f" at step {event.step}")
        if event is not None and event.phase:
            text.append(" in ").append_text(literal(event.phase))
        return text
    text = Text("✗ NON-FINITE ", style=_bold(palette.error))
    if event is None:
        text.append("value seen, but the report does not say where")
        return text
    text.append_text(literal(event.value or "inf/nan"))
    text.append(" born")
    if event.step is not None:
        text.append(f" at step {event.step}")
    if event.phase:
        text.append(" in ").append_text(literal(event.phase))
    if event.dtype:
        text.append(" (")
        text.append_text(literal(event.dtype))
        text.append(")")
    return text


def where(report: Report) -> Text:
    """'model.2 (Linear) · op addmm · file.py:41' — every part literal."""
    event = report.event
    if event is None:
        return Text("-")
    parts: list[Text] = []
    if event.module or event.module_type:
        part = literal(event.module or "")
        if event.module_type:
            part.append(" (" if event.module else "")
            part.append_text(literal(event.module_type))
            part.append(")" if event.module else "")
        parts.append(part)
    if event.op:
        parts.append(Text("op ").append_text(literal(event.op)))
    if event.location:
        parts.append(literal(f"{event.location.file}:{event.location.line}"))
    if not parts:
        return Text("unknown place")
    return Text(" · ").join(parts)


def symptom_line(symptom: Symptom | None) -> Text:
    if symptom is None:
        return Text("none")
    text = literal(symptom.title or symptom.id)
    text.append(f" ({symptom.confidence:.0%})", style="dim")
    return text


def fix_line(fix: Fix | None) -> Text:
    if fix is None:
        return Text("none")
    text = literal(fix.title)
    text.append(f" [{num(fix.score)}]", style="dim")
    return text


def _bold(color: str) -> str:
    return f"bold {color}"
