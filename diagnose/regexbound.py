"""Regular expressions read from files (records, rules) run under a time bound on every call.

The files' contract is Python ``re`` syntax, but the stdlib ``re`` has no timeout: a pattern
such as ``(?=(a+)+$)`` backtracks for hours on 40 characters, and no static reading of a
pattern tells every such case apart. So a pattern from a file is checked with ``re`` (is it
valid?) and then run by the third-party ``regex`` engine, whose ``timeout=`` bounds each call:
a call that runs out of time raises :class:`PatternTimeout`, which callers count as "no match"
and report once.

``regex`` (in its ``V0`` mode, the one compatible with ``re``) reads two things that ``re``
takes literally in another way: a brace that is not a repeat count (``x{e<=1}`` is fuzzy
matching there) and ``[:`` inside a class (``[[:digit:]]``, a POSIX class there). Such
characters are escaped before ``regex`` compiles the pattern, and ``re``'s parser confirms
that the escaped pattern means the same as the original; a pattern where it does not is
refused with :class:`UnboundedPattern` rather than run with another meaning.
"""

from __future__ import annotations

import re
import re._parser as sre_parse
from functools import lru_cache
from typing import Any

import regex

from diagnose.records.patterns import is_safe_subset, pattern_error

# One call on one text. Real patterns take microseconds on the matcher's capped lines; a
# pattern that needs more is backtracking. ``regex`` checks the clock every so many steps, so
# a call may overrun this by a few tens of milliseconds.
SEARCH_TIMEOUT_S = 0.05

# text that ``re`` reads literally but ``regex`` may not (see the module docstring): a brace
# that is not a repeat count, and a bracket inside a class
_LITERAL_BRACE = re.compile(r"\{(?![0-9]*(?:,[0-9]*)?\})")
_NAMED_CHARACTER = re.compile(r"\\N\{[^}]*\}")


class PatternTimeout(Exception):
    """A search ran past its time bound (its pattern backtracks on that text)."""

    def __init__(self, pattern: str, seconds: float) -> None:
        super().__init__(f"pattern ran past its {seconds:g} s time bound")
        self.pattern = pattern
        self.seconds = seconds


class UnboundedPattern(ValueError):
    """A pattern that cannot be run under a time bound with the meaning ``re`` gives it."""


@lru_cache(maxsize=8192)
def compile_bounded(pattern: str) -> Any:
    """``pattern`` compiled for bounded searches; :class:`UnboundedPattern` says why it can't be.

    The reason is one line: ``re``'s own message for an invalid pattern, or the construct the
    bounded engine would read differently.
    """
    if not isinstance(pattern, str):
        raise UnboundedPattern(f"a pattern is text, got {type(pattern).__name__}")
    reason = pattern_error(pattern)
    if reason is not None:
        shape = reason.startswith("pattern ")  # too long, too deep, too costly: said whole
        raise UnboundedPattern(reason if shape else f"pattern does not compile: {reason}")
    source = pattern if is_safe_subset(pattern) else _as_re_reads_it(pattern)
    try:
        return regex.compile(source, regex.V0)
    except (regex.error, RecursionError, OverflowError, ValueError) as exc:
        raise UnboundedPattern(f"the bounded regex engine cannot compile it: {exc}") from None


def search(compiled: Any, text: str, timeout: float = SEARCH_TIMEOUT_S) -> Any:
    """``compiled.search(text)`` within ``timeout`` seconds; :class:`PatternTimeout` past it."""
    try:
        return compiled.search(text, timeout=timeout)
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, timeout) from None


def _as_re_reads_it(pattern: str) -> str:
    """``pattern`` with the characters ``re`` takes literally (and ``regex`` may not) escaped."""
    if _LITERAL_BRACE.search(pattern) is None and pattern.count("[") < 2:
        return pattern
    out: list[str] = []
    in_class = class_start = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            named = _NAMED_CHARACTER.match(pattern, i)
            end = named.end() if named else i + 2
            out.append(pattern[i:end])
            i = end
            continue
        if ch == "{" and _LITERAL_BRACE.match(pattern, i) is not None:
            ch = "\\{"  # not a repeat count: a literal in every context of `re`
        elif in_class:
            if ch == "]" and not class_start:
                in_class = False
            elif ch == "[":
                ch = "\\["
            class_start = class_start and ch == "^"
        elif ch == "[":
            in_class = class_start = True
        out.append(ch)
        i += 1
    escaped = "".join(out)
    try:
        same = str(sre_parse.parse(escaped).data) == str(sre_parse.parse(pattern).data)
    except (re.error, RecursionError, OverflowError):
        same = False
    if not same:
        raise UnboundedPattern("the bounded regex engine would read this pattern differently")
    return escaped
