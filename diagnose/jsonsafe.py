"""JSON from user files (records, reports, configs) read with the same bounds as YAML.

``json.loads`` reads any number and any nesting, and fails in ways no caller expects: an
integer past Python's 4,300-digit limit raises a bare ``ValueError`` (which surfaced as an
internal error), a document nested a few thousand deep raises ``RecursionError``. Here both
are :class:`JSONLimitError` (a ``ValueError``) with one line saying what and where, and an
integer longer than :data:`MAX_INT_DIGITS` (also the YAML loader's bound) is refused before
Python converts it. Lone surrogates (``"\\ud800"``) are left as they are: every output funnel
(``diagnose.safetext``) shows them as ``\\ud800`` text.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_INT_DIGITS = 40  # far past any count, size, seed or line number a file here holds
_LONG_INT = re.compile(rf"-?\d{{{MAX_INT_DIGITS + 1},}}")


class JSONLimitError(ValueError):
    """JSON past one of the bounds: the message is one line with the line it is on."""


def loads(text: str | bytes) -> Any:
    """``json.loads(text)`` within the bounds; ``json.JSONDecodeError`` for invalid JSON."""
    source = text if isinstance(text, str) else text.decode("utf-8")

    def bounded_int(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise _too_long(source, digits)
        return int(digits)

    try:
        return json.loads(source, parse_int=bounded_int)
    except RecursionError:
        raise JSONLimitError("JSON nested too deep") from None


def _too_long(source: str, digits: str) -> JSONLimitError:
    found = _LONG_INT.search(source)
    line = source.count("\n", 0, found.start()) + 1 if found else None
    where = f" at line {line}" if line is not None else ""
    return JSONLimitError(
        f"an integer of {len(digits.lstrip('-')):,} digits{where}: too large "
        f"(at most {MAX_INT_DIGITS} digits)"
    )
