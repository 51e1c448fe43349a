"""Checks that a record's ``messagePattern`` compiles as a Python regular expression, fast.

``re.compile`` costs 100-250 us for a message-sized pattern (the parser is pure Python), which
would make loading 100k records take half a minute. Almost every real pattern is literal text
with a few holes (``\\d+``, ``[^']+``, ``(?:a|b)``, ``.*?``), so a single C-speed regular
expression first recognises that safe subset: everything it accepts is known to compile. Only
patterns outside the subset go to ``re.compile`` (whose verdict is then cached by pattern).
A property-based test checks that the recogniser never accepts a pattern ``re`` rejects.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

# Building blocks of the safe subset. Every construct here compiles in every context it can
# appear in below; anything else (ranges other than a-z/A-Z/0-9, counted repeats with a
# maximum, named groups, lookarounds, backreferences, ...) falls back to re.compile.
_LITERAL = r"[^\\.^$*+?{}\[\]|()]"
_ESCAPE = r"\\(?:[^A-Za-z0-9]|[dDwWsSntrfv])"
_ANCHOR = r"(?:\^|\$|\\[bBAZ])"
_CLASS_ITEM = r"(?:a-z|A-Z|0-9|[^\\\[\]\-&|~^]|" + _ESCAPE + r")"
_CLASS = r"\[\^?" + _CLASS_ITEM + r"+\]"
_QUANT = r"(?:(?:[*+?]|\{[0-9]{1,4}\}|\{[0-9]{1,4},\})\??)"


def _grammar(possessive: str) -> str:
    """The recogniser; ``possessive`` is ``"+"`` for Python's backtracking engine (runs of atoms
    are consumed possessively: the grammar is deterministic, so this never rejects a pattern
    it should accept, and it keeps a failing match linear) and ``""`` for an automaton."""
    atom = r"(?:" + _LITERAL + "+" + possessive + "|" + _ESCAPE + r"|\.|" + _CLASS + ")"
    piece0 = r"(?:" + atom + "+" + possessive + _QUANT + "?|" + _ANCHOR + ")"

    def group(inner: str) -> str:
        return r"\((?:\?:)?(?:" + inner + r"|\|)*" + possessive + r"\)" + _QUANT + "?"

    group2 = group(piece0 + "|" + group(piece0))
    return r"(?:" + piece0 + "|" + group2 + r"|\|)*" + possessive


_SAFE = re.compile(_grammar("+"))
# The same language for pydantic's Rust regex engine (no possessive quantifiers; an automaton
# needs none), so the models check the common case without calling Python.
SAFE_SUBSET_RUST = "^" + _grammar("") + "$"


def is_safe_subset(pattern: str) -> bool:
    """True when ``pattern`` is in the subset that is known to compile without parsing it."""
    return _SAFE.fullmatch(pattern) is not None


@lru_cache(maxsize=4096)
def _compile_error(pattern: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error as exc:
        return str(exc)
    except (RecursionError, OverflowError, ValueError) as exc:  # absurdly nested or huge
        return f"cannot be compiled: {type(exc).__name__}: {exc}"
    return None


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid Python regular expression, or None when it is.

    The reason is ``re``'s own message, e.g. ``unbalanced parenthesis at position 12``.
    """
    if is_safe_subset(pattern):
        return None
    return _compile_error(pattern)
