"""Everything an event says, for the Details modal: message, place, op inputs and their roles,
the call chain, and each piece of evidence the tracer left.

Pure functions from an Event to Rich renderables; every value from the report is ``literal``.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from diagnose.report import Event, InputValues, Location, TensorStats
from tui.text import Palette, literal, num, plural, stat_cell


def event_detail(event: Event, palette: Palette) -> RenderableType:
    """The event top to bottom; sections with nothing to say are left out."""
    parts: list[RenderableType] = [_heading("The event"), _summary(event)]
    if event.op_inputs:
        parts += [_heading("Op inputs"), _inputs(event, palette)]
    sources = _sources(event)
    if sources.plain:
        parts += [_heading("Where the inputs came from"), sources]
    if event.call_chain:
        chain = Text()
        for n, frame in enumerate(event.call_chain):
            chain.append("  " * n + ("└ " if n else ""))
            chain.append_text(literal(f"{frame.file}:{frame.line}"))
            if frame.function:
                chain.append(" in ")
                chain.append_text(literal(frame.function, "bold"))
            chain.append("\n")
        chain.rstrip()
        parts += [_heading("Call chain (outermost first)"), chain]
    evidence = _evidence(event)
    if evidence.plain:
        parts += [_heading("Evidence"), evidence]
    if event.traceback:
        parts += [_heading("Traceback"), literal(event.traceback.rstrip())]
    return Group(*parts)


def _heading(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def _summary(event: Event) -> Text:
    text = literal(event.message)
    facts = []
    for label, value in (
        ("value", event.value),
        ("dtype", event.dtype),
        ("op", event.op),
        ("phase", event.phase),
        ("step", event.step),
        ("rank", event.rank),
        ("exception", event.exception_type),
    ):
        if value is not None:
            facts.append(Text.assemble(f"{label} ", literal(value, "bold")))
    if event.module:
        module = literal(event.module, "bold")
        if event.module_type:
            module.append_text(literal(f" ({event.module_type})"))
        facts.insert(0, Text.assemble("module ", module))
    if facts:
        text.append("\n")
        text.append_text(Text("  ·  ").join(facts))
    for label, location in (
        ("at", event.location),
        ("optimizer built at", event.optimizer_location),
    ):
        if location is not None:
            text.append("\n")
            text.append_text(_location(label, location))
    return text


def _location(label: str, location: Location) -> Text:
    text = Text(f"{label} ")
    text.append_text(literal(f"{location.file}:{location.line}"))
    if location.function:
        text.append(" in ")
        text.append_text(literal(location.function))
    if location.via:
        text.append(" via ")
        text.append_text(literal(location.via))
    if location.code:
        text.append("\n    ")
        text.append_text(literal(location.code.strip(), "bold"))
    return text


def _inputs(event: Event, palette: Palette) -> Table:
    """One row per op input: its name, its role in the op, and its statistics."""
    roles: dict[str, InputValues] = {v.name: v for v in event.op_input_values or []}
    table = Table(box=None, padding=(0, 1), show_edge=False, pad_edge=False)
    for label in ("tensor", "role", "dtype", "shape", "|x| min", "|x| max", "headroom"):
        justify = "right" if label.startswith(("|", "head")) else "left"
        table.add_column(label, justify=justify, no_wrap=True)
    for stats in event.op_inputs:
        values = roles.get(stats.name)
        table.add_row(
            literal(stats.name),
            literal(values.role if values is not None and values.role else "-"),
            literal(stats.dtype or "-"),
            Text(_shape(stats)),
            stat_cell(stats, "abs_min", palette),
            stat_cell(stats, "abs_max", palette),
            stat_cell(stats, "headroom", palette),
        )
    return table


def _shape(stats: TensorStats) -> str:
    return "×".join(map(str, stats.shape)) or "scalar"


def _sources(event: Event) -> Text:
    text = Text()
    names = [s.name for s in event.op_inputs]
    for source in event.op_input_sources or []:
        name = names[source.input] if 0 <= source.input < len(names) else f"input {source.input}"
        text.append("• ")
        text.append_text(literal(name, "bold"))
        text.append(" made by ")
        text.append_text(literal(source.op, "bold"))
        if source.location is not None:
            text.append(" ")
            text.append_text(_location("at", source.location))
        if source.numbers:
            text.append("  numbers ")
            text.append(", ".join(num(n) for n in source.numbers))
        text.append("\n")
    text.rstrip()
    return text


def _evidence(event: Event) -> Text:
    """The tracer's findings: detail lines, then each structured check it made."""
    lines: list[Text] = [literal(detail) for detail in event.details]
    if event.op_numbers:
        lines.append(
            Text("numbers in the op's call: " + ", ".join(num(n) for n in event.op_numbers))
        )
    if event.sample_indices:
        shown = ", ".join(map(str, event.sample_indices[:20]))
        more = len(event.sample_indices) - 20
        lines.append(Text(f"dataset samples {shown}" + (f", … (+{more})" if more > 0 else "")))
    if event.targets_total is not None:
        ignored = event.targets_ignored or 0
        lines.append(
            Text(
                f"{plural(ignored, 'target')} of {event.targets_total} equal ignore_index "
                f"{event.ignore_index}"
            )
        )
    if event.ctc_infeasible_count:
        lines.append(Text(f"{plural(event.ctc_infeasible_count, 'sample')} have no CTC alignment"))
    lines += _checks(event)
    return Text("\n").join(Text("• ").append_text(line) for line in lines)


def _checks(event: Event) -> list[Text]:
    """The structured checks: masked softmax rows, a narrowing cast, accumulation, the
    cross-check of the producer, and what the live run showed about a crash."""
    lines: list[Text] = []
    if event.masked_rows is not None:
        rows = event.masked_rows
        lines.append(
            Text.assemble(
                f"{rows.count} of {rows.total} rows into ",
                literal(rows.op),
                " were -inf everywhere",
            )
        )
    if event.batch_cast is not None:
        cast = event.batch_cast
        lines.append(
            Text.assemble(
                literal(cast.input),
                f": finite in the loader's {cast.source_dtype} batch (max |x| {num(cast.max_abs)}), ",
                f"non-finite once cast to {cast.dtype}",
            )
        )
    if event.accumulation is not None:
        acc = event.accumulation
        line = Text.assemble(literal(acc.op), f" accumulated in {acc.compute_dtype}")
        if acc.terms is not None:
            line.append(f" over {plural(acc.terms, 'term')}")
        if acc.max_abs is not None:
            line.append(f": max |x| {num(acc.max_abs)} against its limit {num(acc.dtype_max)}")
        lines.append(line)
    if event.cross_check is not None:
        check = event.cross_check
        verdict = {True: "agreed", False: "disagreed", None: "could not tell"}[check.agreed]
        line = Text.assemble("cross-check by ", literal(check.method), f": {verdict}")
        if check.detail:
            line.append(" — ")
            line.append_text(literal(check.detail))
        lines.append(line)
    if event.crash is not None:
        lines += [literal(item) for item in event.crash.evidence]
    return lines
