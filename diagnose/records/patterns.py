"""Checks that a record's ``messagePattern`` compiles as a Python regular expression, fast.

``re.compile`` costs 100-250 us for a message-sized pattern (the parser is pure Python), which
would make loading 100k records take half a minute. Almost every real pattern is literal text
with a few holes (``\\d+``, ``[^']+``, ``(?:a|b)``, ``.*?``), so a single C-speed regular
expression first recognises that safe subset: everything it accepts is known to compile. Only
patterns outside the subset go to ``re.compile`` (whose verdict is then cached by pattern).
A property-based test checks that the recogniser never accepts a pattern ``re`` rejects.

Compiling is bounded too. ``re`` keeps a counted repeat as one opcode, but the bounded engine
that runs file patterns (``diagnose.regexbound``) unrolls each ``x{n}`` n times, so a 24-byte
``(?:(?:x{300}){300}){300}`` takes gigabytes there before any match timeout can act. Every
pattern is checked first for its length, its nesting depth and the size it has once its
counted repeats are unrolled (each repeat's lower count times the size of what it repeats);
past a limit it is refused with one line like any invalid pattern.
"""

from __future__ import annotations

import re
import re._constants as sre_constants
import re._parser as sre_parse
import warnings
from functools import lru_cache
from typing import Any

MAX_CHARS = 16_384  # a message pattern is a few hundred characters
MAX_DEPTH = 64  # groups, repeats and alternatives inside each other
MAX_UNROLLED = 20_000  # about 5 MB and 0.02 s for the bounded engine to compile

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
    shape = _shape_error(pattern)
    if shape is not None:
        return shape
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
    if len(pattern) > MAX_CHARS:
        return f"pattern too long ({len(pattern):,} characters; at most {MAX_CHARS:,})"
    if is_safe_subset(pattern):
        return None if _surely_small(pattern) else _cached_shape_error(pattern)
    return _compile_error(pattern)


_COUNT = re.compile(r"\{([0-9]+)")


def _surely_small(pattern: str) -> bool:
    """True when the pattern's unrolled size is surely within bounds without parsing it: it
    is at most its length times the product of all its repeat counts (as if every repeat
    enclosed all the others), which for ``\\d{2}`` in a message is far below the bound."""
    bound = len(pattern)
    for count in _COUNT.finditer(pattern):
        bound *= max(int(count.group(1)), 1)
        if bound > MAX_UNROLLED:
            return False
    return True


class _TooCostly(Exception):
    """Raised out of the walk as soon as a limit is passed (the message says which)."""


_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)


@lru_cache(maxsize=4096)
def _cached_shape_error(pattern: str) -> str | None:
    return _shape_error(pattern)


def _shape_error(pattern: str) -> str | None:
    """Why compiling ``pattern`` would cost too much (see the module doc), or None; a
    pattern ``re`` cannot parse is left to ``re.compile`` to explain."""
    if len(pattern) > MAX_CHARS:
        return f"pattern too long ({len(pattern):,} characters; at most {MAX_CHARS:,})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = sre_parse.parse(pattern)
    except RecursionError:
        return f"pattern nested too deep (more than {MAX_DEPTH} levels)"
    except (re.error, OverflowError, ValueError):
        return None
    try:
        _unrolled(parsed, 0)
    except _TooCostly as exc:
        return str(exc)
    return None


def _unrolled(items: Any, depth: int) -> int:
    """The size of ``items`` (a parsed pattern) with every counted repeat unrolled."""
    if depth > MAX_DEPTH:
        raise _TooCostly(f"pattern nested too deep (more than {MAX_DEPTH} levels)")
    total = 0
    for op, arg in items:
        if op in _REPEATS:
            low, _high, inner = arg
            total += max(low, 1) * _unrolled(inner, depth + 1)
        elif op is sre_constants.SUBPATTERN:
            total += 1 + _unrolled(arg[-1], depth + 1)
        elif op is sre_constants.BRANCH:
            total += 1 + sum(_unrolled(branch, depth + 1) for branch in arg[1])
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            total += 1 + _unrolled(arg[1], depth + 1)
        elif op is sre_constants.ATOMIC_GROUP:
            total += 1 + _unrolled(arg, depth + 1)
        elif op is sre_constants.GROUPREF_EXISTS:
            _group, yes, no = arg
            total += 1 + _unrolled(yes, depth + 1) + (_unrolled(no, depth + 1) if no else 0)
        else:
            total += 1
        if total > MAX_UNROLLED:
            raise _TooCostly(
                f"pattern too costly to compile: its counted repeats unroll to more than "
                f"{MAX_UNROLLED:,} items"
            )
    return total
