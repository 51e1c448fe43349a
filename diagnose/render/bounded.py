"""A report cut to what a reader can take in, for the terminal: the full one stays in its file.

A report is data from a run, or a file someone sent: a message can be 40 MB (a tensor printed
into an exception), a list can hold a million frames. Written to a terminal whole, that is
minutes of scrolling and a frozen UI; nobody reads it. So what is *shown* (text, Markdown, the
UI) comes from a copy where every string longer than :data:`MAX_CHARS` keeps its start and a
note of its full length and where the whole value is, and every list longer than
:data:`MAX_ITEMS` keeps its first items. The JSON output is data for programs and is never
cut; neither is the report file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diagnose.report import Report

MAX_CHARS = 16_384  # a deep traceback is a few thousand characters
MAX_ITEMS = 10_000  # past what any run keeps (history at most 2,250 rows), far past a screen


def bounded(report: Report, report_path: Path | str | None = None) -> Report:
    """``report`` itself when nothing in it is past the bounds, else a cut copy (see above)."""
    data = report.model_dump(mode="python")
    where = (
        f"the full text is in {report_path}"
        if report_path
        else "the full text is in the JSON report (--report PATH)"
    )
    cut = _cut(data, where)
    if cut is data:
        return report
    return type(report).model_validate(cut)


def clip(text: str, where: str, limit: int = MAX_CHARS) -> str:
    """``text`` cut to ``limit`` characters with a note of its length and ``where`` the full
    value is (``"the full text is in r.json"``); unchanged when it is short enough."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text):,} characters in all; {where}]"


def _cut(value: Any, where: str) -> Any:
    """``value`` with its long strings and lists cut; the same object when nothing was."""
    if isinstance(value, str):
        return clip(value, where)
    if isinstance(value, list):
        kept = value[:MAX_ITEMS]
        items = [_cut(item, where) for item in kept]
        if len(value) == len(kept) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    if isinstance(value, dict):
        pairs = [(_cut(key, where), _cut(item, where)) for key, item in value.items()]
        if all(
            k is key and v is item for (k, v), (key, item) in zip(pairs, value.items(), strict=True)
        ):
            return value
        return dict(pairs)
    return value
