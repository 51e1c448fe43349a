"""The record rules that JSON Schema cannot express, shared by the models and the loader.

Documented in ``dataset/schema.json`` (its description and ``$comment``).
"""

from __future__ import annotations

import math
from typing import Any

from diagnose.records.patterns import pattern_error


def line_order_error(
    line: int | None, start: int | None, end: int | None
) -> tuple[str, str] | None:
    """``(field, reason)`` when sourceCodeStart <= lineNumber <= sourceCodeEnd does not hold.

    Only the values that are present are compared: a snippet may be known without the exact
    line, and the other way round.
    """
    if start is not None and end is not None and start > end:
        return "sourceCodeEnd", f"sourceCodeEnd {end} is before sourceCodeStart {start}"
    if line is not None and start is not None and line < start:
        return "lineNumber", f"lineNumber {line} is before sourceCodeStart {start}"
    if line is not None and end is not None and line > end:
        return "lineNumber", f"lineNumber {line} is after sourceCodeEnd {end}"
    return None


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # not a line number: the schema reports it
    return int(value)


def rule_errors(record: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, reason)`` for each loader-only rule a schema-valid record breaks."""
    errors: list[tuple[str, str]] = []
    pattern = record.get("messagePattern")
    if isinstance(pattern, str):
        reason = pattern_error(pattern)
        if reason is not None:
            errors.append(("messagePattern", reason))
    order = line_order_error(
        _int_or_none(record.get("lineNumber")),
        _int_or_none(record.get("sourceCodeStart")),
        _int_or_none(record.get("sourceCodeEnd")),
    )
    if order is not None:
        errors.append(order)
    return errors
