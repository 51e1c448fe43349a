"""What a regular expression needs to see before it can match: its required literal text.

The pattern prefilter only runs a record's ``messagePattern`` on a line that contains the
pattern's longest *required* literal (text every match must contain). Extracting it with
``re._parser`` costs about 140 us a pattern (14 s for 100k records), and even a Python loop
over the pattern's tokens costs ~30 us. So the common shapes -- literal text with holes such
as ``\\d+``, ``[^ ]+``, ``.*?``, ``(?:cuda|cpu)`` -- are read by one C-level ``split`` on
everything that is not required literal text (~5 us), which leaves the literal runs. Anything
else (verbose mode, numeric escapes and back-references, stray brackets, deeper nesting)
falls back to the parser.

A pattern that is an alternation at its top level (``old wording|new wording``, the way the
records spell every wording a message has had) has no literal common to its branches; each
branch has its own, and the pattern may match wherever one of them occurs
(:func:`required_literals`).

A wrong literal would silently hide a record, so the rule is: when in doubt, no literal (the
pattern is then checked on every line, which is slower but never wrong). How long a pattern
may run is not judged here: every search runs under a time bound (:mod:`diagnose.regexbound`).
"""

from __future__ import annotations

import re
import re._constants as sre_c
import re._parser as sre_parse

MIN_LITERAL = 3  # shorter literals would make almost every line a candidate

# Escaped characters that stand for themselves. Before splitting, each ``\c`` is replaced by
# one character: ``c`` itself where it is not special, a private-use stand-in where it is
# (turned back by _UNMASK). Patterns with an escaped backslash skip this (the parser reads them).
_MASKS = {c: c for c in "-&~#,:;'\"<>=!@%/ \t"}
_MASKS.update({c: chr(0xE000 + k) for k, c in enumerate(".()[]{}?*+|^$")})
_FIRST_STAND_IN = chr(0xE000)
_UNMASK = {0xE000 + k: c for k, c in enumerate(".()[]{}?*+|^$")}
# Every alternative starts with a literal character, so the regex engine skips the plain text
# between them in C (a charset prefix), and ``split`` hands back the literal text between
# the separators: escapes, classes, groups (two deep), ``. ^ $ |``, quantifiers and any
# bracket left over (which sends the pattern to the parser).
_SEPARATOR = re.compile(
    r"(\\.|\[\^?\]?(?:\\.|[^\]\\])*\]"
    r"|\((?:[^()\\]|\\.|\((?:[^()\\]|\\.)*\))*\)"
    r"|\.|\^|\$|\||\*|\+|\?|\{\d*(?:,\d*)?\}|\(|\)|\[)",
    re.DOTALL,
)
# a backslash before a letter or digit other than these (\\n, \\x41, \\1, ...): the parser decides
_UNMODELLED_ESCAPE = re.compile(r"\\[^dDwWsSbBAZ\W_]")
_UNMODELLED = frozenset({"|", ")", "[", "("})  # separators that send a pattern to the parser
_VERBOSE = re.compile(r"\(\?[aiLmsu]*x[aiLmsux]*\)")


def required_literals(pattern: str) -> tuple[str, ...] | None:
    """The literals one of which every match of ``pattern`` contains (lowercased), or None.

    One literal for a plain pattern; for a top-level alternation, each branch's own. None when
    some branch has no usable literal (it may match anywhere).
    """
    branches = _top_level_branches(pattern) if "|" in pattern else [pattern]
    found: list[str] = []
    for branch in branches:
        literal = required_literal(branch)
        if literal is None:
            return None
        if literal not in found:
            found.append(literal)
    return tuple(found)


def _top_level_branches(pattern: str) -> list[str]:
    """``a|b(c|d)|e`` -> ``["a", "b(c|d)", "e"]``; the pattern whole when unsure.

    The common shapes are read by the same C-level ``split`` as the literal: a ``|`` outside
    every escape, class and group is a separator of its own. Deeper nesting or brackets
    the split leaves unpaired go to a character scan.
    """
    if "(?" in pattern and _VERBOSE.search(pattern):
        return [pattern]  # verbose: "#" starts a comment, which may hold anything
    items = _SEPARATOR.split(pattern)
    separators = items[1::2]
    if "|" not in separators:
        if _UNMODELLED.isdisjoint(separators):
            return [pattern]
        return _scan_branches(pattern)
    if not _UNMODELLED.isdisjoint(s for s in separators if s != "|"):
        return _scan_branches(pattern)
    branches: list[str] = []
    current: list[str] = [items[0]]
    for k in range(1, len(items), 2):
        if items[k] == "|":
            branches.append("".join(current))
            current = [items[k + 1]]
        else:
            current += (items[k], items[k + 1])
    branches.append("".join(current))
    return branches


def _scan_branches(pattern: str) -> list[str]:
    """:func:`_top_level_branches` by a character scan (any nesting depth)."""
    branches: list[str] = []
    depth = start = i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            if i < 0:
                return [pattern]
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return [pattern]
        elif c == "|" and depth == 0:
            branches.append(pattern[start:i])
            start = i + 1
        i += 1
    if depth:
        return [pattern]
    branches.append(pattern[start:])
    return branches


def _class_end(pattern: str, i: int) -> int:
    """Index of the ``]`` closing the class that opens at ``i`` (-1 if it never closes)."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):  # a ] first in a class is literal
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "]":
            return j
        j += 1
    return -1


def required_literal(pattern: str) -> str | None:
    """The longest text every match of ``pattern`` contains, lowercased (None if too short).

    A top-level alternation has none (its branches share no required text): see
    :func:`required_literals`.
    """
    if "\\\\" not in pattern:
        masked = pattern.replace("\\ ", " ")
        if "\\" in masked:
            masked = _mask(masked)
        items = _SEPARATOR.split(masked)
        if (
            _UNMODELLED.isdisjoint(items[1::2])
            and ("\\" not in masked or _UNMODELLED_ESCAPE.search(masked) is None)
            and not ("(?" in pattern and _VERBOSE.search(pattern))
        ):
            for k in range(1, len(items), 2):
                if items[k][0] in "*+?{":
                    items[k - 1] = items[k - 1][:-1]
            return _finish(max(items[::2], key=len))
    return _parsed_literal(pattern)


def _parsed_literal(pattern: str) -> str | None:
    """The parser's reading (slow, ~140 us): for the syntax the ``split`` does not model."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    runs: list[str] = []
    current: list[str] = []
    _walk(list(parsed), runs, current)
    runs.append("".join(current))
    return _best(runs)


def _mask(masked: str) -> str:
    """Replace each escaped character that stands for itself by one character (_MASKS)."""
    for ch in {part[:1] for part in masked.split("\\")[1:]}:
        stand_in = _MASKS.get(ch)
        if stand_in is not None:
            masked = masked.replace("\\" + ch, stand_in)
    return masked


def _finish(best: str) -> str | None:
    if not best.isascii() and max(best) >= _FIRST_STAND_IN:
        best = best.translate(_UNMASK)
    best = best.lower()
    return best if len(best.strip()) >= MIN_LITERAL else None


def _best(runs: list[str]) -> str | None:
    best = max(runs, key=len, default="")
    best = best.lower()
    return best if len(best.strip()) >= MIN_LITERAL else None


def _flush(runs: list[str], run: list[str]) -> None:
    if run:
        runs.append("".join(run))
        run.clear()


def _walk(items: list, runs: list[str], current: list[str]) -> None:
    """Collect required literal runs from a parsed pattern (sequence level only)."""
    for op, av in items:
        if op is sre_c.LITERAL:
            current.append(chr(av))
        elif op is sre_c.AT:
            continue
        elif op is sre_c.SUBPATTERN:
            # a group is required: its own sequence continues the run
            _walk(list(av[-1]), runs, current)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            low, _high, body = av
            _flush(runs, current)
            if low >= 1:
                inner: list[str] = []
                _walk(list(body), runs, inner)
                _flush(runs, inner)
        else:
            _flush(runs, current)
