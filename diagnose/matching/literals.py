"""What a regular expression needs to see before it can match: its required literal text.

The pattern prefilter only runs a record's ``messagePattern`` on a line that contains the
pattern's longest *required* literal (text every match must contain). Extracting it with
``re._parser`` costs about 140 us a pattern, which is 14 s for 100k records, so the common
shapes (literal text with holes such as ``\\d+``, ``[^ ]+``, ``.*?``, ``(?:cuda|cpu)``) are
read by a small tokenizer instead, and only unusual syntax (verbose mode, numeric escapes,
top-level alternation, stray braces) falls back to the parser.

The same pass counts quantifiers, so a pattern that could backtrack badly (two or more
unbounded quantifiers, or a repeated group) is flagged as *risky* and searched with a time
budget.

A wrong literal would silently hide a record, so the rule is: when in doubt, no literal (the
pattern is then checked on every line, which is slower but never wrong).
"""

from __future__ import annotations

import re
import re._constants as sre_c
import re._parser as sre_parse
from dataclasses import dataclass

MIN_LITERAL = 3  # shorter literals would make almost every line a candidate

_TOKEN = re.compile(
    r"""
      (?P<esc>\\.)
    | (?P<cls>\[\^?\]?(?:\\.|\[:[a-z]+:\]|[^\]\\])*\])
    | (?P<open>\((?:\?(?:[:=!>]|<[=!]|P?<[A-Za-z_]\w*>|[a-zA-Z-]+:))?)
    | (?P<flags>\(\?[a-zA-Z]+\))
    | (?P<close>\))
    | (?P<bar>\|)
    | (?P<quant>(?:[*+?]|\{\d*(?:,\d*)?\})[?+]?)
    | (?P<any>[.^$])
    | (?P<text>(?:[^\\\[\]()|*+?{}.^$]|\\[^A-Za-z0-9])+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_UNESCAPE = re.compile(r"\\(.)", re.DOTALL)
_LITERAL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_ZERO_WIDTH_ESCAPES = frozenset("bBAZ")


@dataclass(frozen=True, slots=True)
class PatternInfo:
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


def _best(runs: list[str]) -> str | None:
    best = max(runs, key=len, default="")
    best = best.lower()
    return best if len(best.strip()) >= MIN_LITERAL else None


def _analyze_fast(pattern: str) -> PatternInfo:
    runs: list[str] = []
    run: list[str] = []  # characters of the current literal run
    depth = 0
    unbounded = 0
    dot_unbounded = 0
    risky = False
    last_kind = ""  # kind of the previous token, to know what a quantifier applies to
    last_tok = ""
    for m in _TOKEN.finditer(pattern):
        kind = m.lastgroup or "other"
        tok = m.group()
        if kind == "text":
            if depth == 0:
                run.append(_UNESCAPE.sub(r"\1", tok) if "\\" in tok else tok)
        elif kind == "esc":
            ch = tok[1]
            if ch.isalnum():
                if ch in _LITERAL_ESCAPES:
                    if depth == 0:
                        run.append(_LITERAL_ESCAPES[ch])
                elif ch in _ZERO_WIDTH_ESCAPES:
                    pass  # \b and friends consume nothing: the run stays contiguous
                elif ch in "dDwWsS":
                    _flush(runs, run)
                else:
                    raise _Fallback  # \x41, \u..., \N{...}, octal, back-references
            elif depth == 0:
                run.append(ch)
        elif kind == "quant":
            if last_kind in ("", "open", "bar", "quant_done", "flags"):
                raise _Fallback  # nothing to repeat, or a nested quantifier form
            low, high = _bounds(tok)
            if high is None or high > 1:
                if high is None:
                    unbounded += 1
                    dot_unbounded += last_tok == "."
                if last_kind == "close":
                    risky = True  # a repeated group: the classic (a+)+ shape
            if depth == 0 and last_kind in ("text", "esc_literal"):
                if low == 0:
                    _pop_last_char(run)
                _flush(runs, run)
            else:
                _flush(runs, run)
            last_kind = "quant_done"
            last_tok = tok
            continue
        elif kind == "open":
            _flush(runs, run)
            depth += 1
        elif kind == "close":
            _flush(runs, run)
            depth -= 1
            if depth < 0:
                raise _Fallback
        elif kind == "bar":
            if depth == 0:
                raise _Fallback  # top-level alternation: the parser decides
            _flush(runs, run)
        elif kind == "flags":
            if "x" in tok or "X" in tok or m.start() != 0:
                raise _Fallback
        elif kind == "cls" or kind == "any":
            if not (kind == "any" and tok in "^$"):
                _flush(runs, run)
        else:
            raise _Fallback
        last_kind = "esc_literal" if kind == "esc" and not tok[1].isalnum() else kind
        if kind == "esc" and tok[1] in _LITERAL_ESCAPES:
            last_kind = "esc_literal"
        last_tok = tok
    if depth != 0:
        raise _Fallback
    _flush(runs, run)
    return PatternInfo(_best(runs), risky or _too_many(unbounded, dot_unbounded))


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


def _pop_last_char(run: list[str]) -> None:
    if run:
        run[-1] = run[-1][:-1]


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
