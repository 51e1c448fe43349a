"""Replaying the failing step: the statements of the user's block that ran before the line
that raised, and that line, again, in a copy of the frame's names.

The block is the body (a loop's, a function's) holding the crash line; what it runs is the
user's own code, compiled under the script's file name so that tracebacks and anomaly mode
name the script's lines. Statements that would change the training (an optimizer or
scheduler step, zero_grad) or only print are left out; the rest ran a moment ago in the
same state.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from types import FrameType
from typing import Any

from diagnose.crash.live import statement_at

_SKIPPED_CALLS = {"step", "zero_grad", "print", "log", "write", "add_scalar", "flush", "save"}


@dataclass
class Step:
    """The statements to run again (ending with the one that raised) and the names they see."""

    file: str
    line: int
    code: Any
    names: dict[str, Any]


def _skipped(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return isinstance(stmt, ast.Return | ast.Break | ast.Continue | ast.Raise)
    func = stmt.value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in _SKIPPED_CALLS


def failing_step(frame: FrameType, line: int) -> Step | None:
    """The step around ``line`` of ``frame``, ready to run again; None without its source."""
    file = frame.f_code.co_filename
    found = statement_at(file, line)
    if found is None:
        return None
    stmt, body, _owner = found
    at = next((i for i, s in enumerate(body) if s is stmt), None)
    if at is None:
        return None
    kept = [s for s in body[:at] if not _skipped(s)] + [stmt]
    module = ast.Module(body=kept, type_ignores=[])
    try:
        code = compile(module, file, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    names = dict(frame.f_globals)
    names.update(frame.f_locals)
    return Step(file, line, code, names)
