"""What a regular expression needs to see before it can match: its required literal text.

The pattern prefilter only runs a record's ``messagePattern`` on a line that contains the
pattern's longest *required* literal (text every match must contain). Extracting it with
``re._parser`` costs about 140 us a pattern (14 s for 100k records), and even a Python loop
over the pattern's tokens costs ~30 us. So the common shapes -- literal text with holes such
as ``\\d+``, ``[^ ]+``, ``.*?``, ``(?:cuda|cpu)`` -- are read by one C-level ``split`` on
everything that is not required literal text (~5 us), which leaves the literal runs. Anything
else (verbose mode, numeric escapes and back-references, stray brackets, deeper nesting, a
character the split uses as a stand-in) falls back to the parser. Around the split, the work
is C-level calls too: the longest run is found by ``max``, and only where a quantifier
follows it are the runs walked in Python to cut quantified last characters (see
:func:`_longest_run`); ~5 us a pattern in all, against ~8 us with that walk for every
pattern (the benchmark ``benchmarks/bench_matcher.py`` records the figures).

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
_UNMASK = {chr(0xE000 + k): c for k, c in enumerate(".()[]{}?*+|^$")}
# the escapes _MASKS replaces (one C-level findall names those a pattern has)
_MASKED_ESCAPE = re.compile("\\\\([" + re.escape("".join(_MASKS)) + "])")
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
_UNMODELLED = frozenset({")", "[", "("})  # separators that send a pattern to the parser
_VERBOSE = re.compile(r"\(\?[aiLmsu]*x[aiLmsux]*\)")
# a backslash before a letter or digit other than these (\\n, \\x41, \\1, ...): the parser decides
_UNMODELLED_ESCAPE = re.compile(r"\\[^dDwWsSbBAZ\W_]")
# a pattern that holds a stand-in character itself: the split would read it back as the
# punctuation it stands for, so the parser reads such a pattern
_STAND_IN = re.compile("[" + "".join(_UNMASK) + "]")


def required_literals(pattern: str) -> tuple[str, ...] | None:
    """The literals one of which every match of ``pattern`` contains (lowercased), or None.

    One literal for a plain pattern; for a top-level alternation, each branch's own. None when
    some branch has no usable literal (it may match anywhere). The common shapes need one
    C-level ``split`` (a ``|`` outside every escape, class and group is a separator of its
    own); deeper nesting or stray brackets go to a character scan and the parser.
    """
    items = _split(pattern)
    if items is None:
        branches = _scan_branches(pattern) if "|" in pattern else [pattern]
        found = [required_literal(branch) for branch in branches]
    elif "|" in items:  # only a separator is "|": the text between them never holds one
        found = [_longest_run(branch) for branch in _split_at_bars(items)]
    else:  # the common case: one branch
        literal = _longest_run(items)
        return None if literal is None else (literal,)
    if None in found:
        return None
    return tuple(dict.fromkeys(found))


def _split_at_bars(items: list[str]) -> list[list[str]]:
    """The items of :func:`_split` (text, separator, ..., text) cut at each top-level ``|``.

    The items equal to ``"|"`` are the bars (no text item holds one), found by C-level
    ``index``; each branch is a slice that again starts and ends with text.
    """
    branches: list[list[str]] = []
    start = 0
    for _ in range(items.count("|")):
        end = items.index("|", start)
        branches.append(items[start:end])
        start = end + 1
    branches.append(items[start:])
    return branches


def _scan_branches(pattern: str) -> list[str]:
    """The top-level branches of ``pattern`` by a character scan (any nesting depth).

    The pattern whole when unsure: brackets that do not pair up, or verbose mode (where ``#``
    starts a comment that may hold anything).
    """
    if "(?" in pattern and _VERBOSE.search(pattern):
        return [pattern]
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
    items = _split(pattern)
    if items is None or "|" in items[1::2]:
        return _parsed_literal(pattern)
    return _longest_run(items)


def _split(pattern: str) -> list[str] | None:
    """``pattern`` split into literal text and separators, or None where the split cannot say.

    Escaped characters that stand for themselves are masked first (so ``\\|`` is text, not a
    bar); the result alternates text, separator, text, ... and is None for syntax the split
    does not model (escaped backslashes, numeric escapes, verbose mode, stray brackets,
    groups nested deeper than two).
    """
    if "\\\\" in pattern or ("(?" in pattern and _VERBOSE.search(pattern)):
        return None
    if not pattern.isascii() and _STAND_IN.search(pattern) is not None:
        return None
    masked = pattern.replace("\\ ", " ")
    if "\\" in masked:
        masked = _mask(masked)
        if _UNMODELLED_ESCAPE.search(masked) is not None:
            return None
    items = _SEPARATOR.split(masked)
    if not _UNMODELLED.isdisjoint(items[1::2]):
        return None
    return items


def _longest_run(items: list[str]) -> str | None:
    """The longest literal text between separators (a quantified last character is not in it).

    Only a run that a quantifier follows loses its last character, and it only gets shorter:
    so when the first longest run is not followed by one, it is the answer (C-level ``max``
    and ``index``, no Python loop over the items); else :func:`_chopped_longest_run`.
    """
    runs = items[::2]
    best = max(runs, key=len)
    after = 2 * runs.index(best) + 1
    if after < len(items) and items[after][0] in "*+?{":
        return _chopped_longest_run(items)
    return _finish(best)


def _chopped_longest_run(items: list[str]) -> str | None:
    """:func:`_longest_run` the long way: every quantified last character cut, then the longest."""
    runs = items[::2]
    for k in range(1, len(items), 2):
        if items[k][0] in "*+?{":
            runs[k // 2] = runs[k // 2][:-1]  # the repeated character may be absent, or many
    return _finish(max(runs, key=len))


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
    for ch in set(_MASKED_ESCAPE.findall(masked)):  # usually none: ``\\d``, ``\\w`` stay
        masked = masked.replace("\\" + ch, _MASKS[ch])
    return masked


def _finish(best: str) -> str | None:
    if not best.isascii():  # a few ``replace`` calls: ``translate`` of non-ASCII text is slower
        for stand_in, char in _UNMASK.items():
            if stand_in in best:
                best = best.replace(stand_in, char)
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
