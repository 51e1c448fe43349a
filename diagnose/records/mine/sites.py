"""A raise, warning or check site found in a library's source: the facts a record is made of."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from diagnose.records.mine.pieces import Pieces

SiteKind = Literal["raise", "warn", "log", "cpp"]
KINDS: tuple[SiteKind, ...] = ("raise", "warn", "log", "cpp")
DEFAULT_KINDS: tuple[SiteKind, ...] = ("raise", "warn", "cpp")


@dataclass(frozen=True, slots=True)
class Site:
    """One place that raises, warns or logs a message.

    ``line`` is the line of the statement or macro name (the record's ``lineNumber``),
    ``end_line`` the last line of the call. ``pieces`` is None when the message is not spelled
    out at the site (``raise ValueError(msg)`` with ``msg`` built elsewhere); ``note`` says why.
    ``rendering`` is ``"repr"`` when users see the message quoted (``KeyError: 'x'``).
    """

    path: str
    kind: SiteKind
    line: int
    end_line: int
    error_class: str | None
    error_type: str  # exception | warning | log
    severity: str  # error | warning
    pieces: Pieces | None
    note: str | None = None
    rendering: Literal["str", "repr"] = "str"
