"""What a regular expression needs to see before it can match: its required literal text.

The pattern prefilter only runs a record's ``messagePattern`` on a line that contains the
pattern's longest *required* literal (text every match must contain). Extracting it with
``re._parser`` costs about 140 us a pattern (14 s for 100k records), and even a Python loop
over the pattern's tokens costs ~30 us. So the common shapes -- literal text with holes such
as ``\\d+``, ``[^ ]+``, ``.*?``, ``(?:cuda|cpu)`` -- are read by two C-level regex passes
(~5 us): one ``fullmatch`` checks that the pattern is a plain sequence of atoms (literal
characters, escapes, classes, groups nested at most two deep, each optionally quantified),
and one ``split`` on everything that is not required literal text leaves the literal runs.
Anything else (verbose mode, numeric escapes and back-references, top-level alternation,
stray braces, deeper nesting) falls back to the parser.

The same pass judges backtracking risk: a repeated group, two unbounded ``.``-quantifiers,
or three *overlapping* unbounded quantifiers make a pattern *risky* (searched with a time
budget). An unbounded quantifier followed by a literal character its atom cannot match --
``\\d+x``, ``[^ ]+ `` -- is *delimited*: it can end in one place only, so it does not
multiply the backtracking of the others, and it is not counted.

A wrong literal would silently hide a record, so the rule is: when in doubt, no literal (the
pattern is then checked on every line, which is slower but never wrong).
"""

from __future__ import annotations

import re
import re._constants as sre_c
import re._parser as sre_parse
from typing import NamedTuple

MIN_LITERAL = 3  # shorter literals would make almost every line a candidate

# Escaped characters that stand for themselves. Before splitting, each ``\c`` is replaced by
# one character: ``c`` itself where it is not special, a private-use stand-in where it is
# (turned back by _UNMASK). Patterns with an escaped backslash skip this (the parser reads them).
_MASKS = {c: c for c in "-&~#,:;'\"<>=!@%/ \t"}
_MASKS.update({c: chr(0xE000 + k) for k, c in enumerate(".()[]{}?*+|^$")})
_FIRST_STAND_IN = chr(0xE000)
_UNMASK = {0xE000 + k: c for k, c in enumerate(".()[]{}?*+|^$")}
_UNMASK_ESCAPED = {0xE000 + k: f"\\{c}" for k, c in enumerate(".()[]{}?*+|^$")}
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
_CLASS_ESCAPES = frozenset("dDwWsS")
# a backslash before a letter or digit other than these (\\n, \\x41, \\1, ...): the parser decides
_UNMODELLED_ESCAPE = re.compile(r"\\[^dDwWsSbBAZ\W_]")
_UNMODELLED = frozenset({"|", ")", "[", "("})  # separators that send a pattern to the parser
_VERBOSE = re.compile(r"\(\?[aiLmsu]*x[aiLmsux]*\)")
_ZERO_WIDTH_ESCAPES = frozenset("bBAZ")
_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
_CASE_FLAG = re.compile(r"\(\?[aiLmsux-]*i")  # (?i) or (?i:...): case-insensitive somewhere
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ATOM_MATCHERS: dict[str, re.Pattern[str] | None] = {}  # atom source -> one-character matcher
_UNBOUNDED_MARKS: dict[str, int | None] = {"*": None, "+": None}  # "?" repeats at most once
_DELIMITED: dict[tuple[str, str, str], bool] = {}  # (atom, character before, after) -> fenced


class PatternInfo(NamedTuple):
    """What the index needs to know about one pattern."""

    literal: str | None  # longest required literal, lowercased; None: check on every line
    risky: bool  # may backtrack badly: search it with a time budget


class _Fallback(Exception):
    """The fast tokenizer met syntax it does not model; use the real parser."""


def analyze(pattern: str) -> PatternInfo:
    """Return the required literal and the backtracking risk of ``pattern``.

    Never raises for a bad pattern: a pattern that does not parse gets no literal (the
    matcher finds out when it compiles it, and skips it).
    """
    try:
        return _analyze_fast(pattern)
    except _Fallback:
        pass
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return PatternInfo(None, True)
    runs: list[str] = []
    current: list[str] = []
    _walk(list(parsed), runs, current)
    runs.append("".join(current))
    return PatternInfo(_best(runs), _risky_parsed(list(parsed), depth_unbounded=0))


def required_literal(pattern: str) -> str | None:
    """Just the literal of :func:`analyze` (the same value), with less work per pattern.

    The index needs every pattern's literal when it is built, but a pattern's risk only when
    the pattern is first run, so building reads the literal alone.
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
    return analyze(pattern).literal


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


def _analyze_fast(pattern: str) -> PatternInfo:
    """Literal and risk from one ``split``; raises :class:`_Fallback` on syntax it skips."""
    if "\\\\" in pattern:
        raise _Fallback
    masked = pattern.replace("\\ ", " ")  # re.escape's escaped spaces, the most common
    if "\\" in masked:
        masked = _mask(masked)
    ignore_case = "(?" in pattern and _CASE_FLAG.search(pattern) is not None
    items = _SEPARATOR.split(masked)  # text, separator, text, ..., text
    unbounded = 0
    dot_unbounded = 0
    risky = False
    for k in range(1, len(items), 2):
        sep = items[k]
        first = sep[0]
        if first in "*+?{":
            before = items[k - 1]
            if before:
                atom = before[-1]
                previous = before[-2:-1]
                items[k - 1] = before[:-1]  # the repeated character may be absent, or many
            elif k >= 3 and items[k - 2][0] not in "*+?{":
                atom = items[k - 2]
                previous = items[k - 3][-1:]
            else:
                continue  # the lazy/possessive mark of the quantifier before
            high = _UNBOUNDED_MARKS.get(first, 1) if first != "{" else _bounds(sep)[1]
            if atom[0] == "(" and len(atom) > 1:
                risky = risky or high is None or high > 1  # a repeated group: (a+)+
            elif high is None:
                if atom == ".":
                    dot_unbounded += 1
                    unbounded += 1
                elif ignore_case or not _delimited(atom, previous, items[k + 1][:1]):
                    unbounded += 1
        elif first == "\\":
            ch = sep[1]
            if ch not in _CLASS_ESCAPES and ch not in _ZERO_WIDTH_ESCAPES and ch.isalnum():
                raise _Fallback  # \n, \x41, \u..., back-references: the parser knows them
        elif first == "(":
            if len(sep) == 1:
                raise _Fallback  # nested deeper than the separator models
            # quantifiers inside a group all count (escaped ones are masked; a + in a class
            # or a lazy/possessive mark counts too, which only errs on the safe side)
            unbounded += sep.count("*") + sep.count("+") + sep.count(",}")
            if "x" in sep and _GLOBAL_FLAGS.fullmatch(sep):
                raise _Fallback  # verbose: spaces and # mean something else
        elif sep in ("|", ")", "["):
            raise _Fallback  # top-level alternation, or brackets that do not pair up
    best = max(items[::2], key=len)
    risky = risky or _too_many(unbounded, dot_unbounded)
    return PatternInfo(_finish(best), risky)


def _delimited(atom: str, previous: str, after: str) -> bool:
    """Whether a repeated ``atom`` sits between two literal characters it cannot match.

    In ``x\\d+y`` the run of digits starts right after an ``x`` and must end right before
    a ``y``: the runs tried from different starting points are disjoint, so however the rest
    of the pattern backtracks, this quantifier adds linear work, not another factor of the
    line length. (Delimited on one side only is not enough: ``[^ ]+\\d+x`` is cubic.)
    """
    if not previous or not after:
        return False
    key = (atom, previous, after)
    known = _DELIMITED.get(key)
    if known is None:
        known = _DELIMITED[key] = _fenced(atom, previous, after)
    return known


def _fenced(atom: str, previous: str, after: str) -> bool:
    if len(atom) == 1:
        source = _UNMASK_ESCAPED.get(ord(atom)) or re.escape(atom)
    elif atom[0] == "[" and "-" not in atom:  # unmasked \- inside a class would be a range
        source = atom.translate(_UNMASK_ESCAPED)
    elif atom[0] == "\\":
        source = atom
    else:
        return False
    matcher = _ATOM_MATCHERS.get(source, False)
    if matcher is False:
        try:
            matcher = re.compile(source)
        except re.error:
            matcher = None
        _ATOM_MATCHERS[source] = matcher
    if matcher is None:
        return False
    return all(matcher.fullmatch(_UNMASK.get(ord(c), c)) is None for c in (previous, after))


def _too_many(unbounded: int, dot_unbounded: int) -> bool:
    """Polynomial backtracking needs several unbounded quantifiers that can eat the same text.

    One ``.*`` or a few ``\\d+`` separated by literal text stay (near) linear per start
    position; two ``.*`` or three unbounded holes of any kind can go cubic on a long line.
    """
    return dot_unbounded >= 2 or unbounded >= 3


def _bounds(quant: str) -> tuple[int, int | None]:
    q = quant.rstrip("?+") if quant[0] == "{" else quant[0]
    if q == "*":
        return 0, None
    if q == "+":
        return 1, None
    if q == "?":
        return 0, 1
    body = q[1:-1]
    if "," not in body:
        n = int(body or 0)
        return n, n
    lo, hi = body.split(",", 1)
    return int(lo or 0), (int(hi) if hi else None)


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


def _risky_parsed(items: list, depth_unbounded: int) -> bool:
    unbounded = 0
    dot_unbounded = 0
    for op, av in items:
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            _low, high, body = av
            if high is sre_c.MAXREPEAT:
                unbounded += 1
                dot_unbounded += any(o is sre_c.ANY for o, _ in body)
            if high is sre_c.MAXREPEAT or high > 1:
                if any(o in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.BRANCH) for o, _ in body):
                    return True
                if _risky_parsed(list(body), depth_unbounded + 1):
                    return True
        elif op is sre_c.SUBPATTERN:
            if _risky_parsed(list(av[-1]), depth_unbounded):
                return True
        elif op is sre_c.BRANCH and any(_risky_parsed(list(b), depth_unbounded) for b in av[1]):
            return True
    return _too_many(unbounded, dot_unbounded)
