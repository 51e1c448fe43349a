"""Pieces -> ``messagePattern``, and the self-test every mined pattern must pass.

The pattern is searched (``re.search``) against one error line, so it is built from one
line of the message: the first, unless another line carries more literal text (a message
whose first line is a hole). Literals are escaped (only the characters ``re`` treats as
special, so patterns read like the shipped ones); a run of holes becomes one lazy wildcard
``.*?`` that stays on its line, or ``-?\\d+`` for values the format spells as integers
(``%d``, ``{:d}``). Holes at either end are dropped: the search is unanchored, so they only
cost time. A line's trailing blanks are dropped as well, because logs and tracebacks lose them.

The self-test renders the message from its pieces with several fills for the holes (empty,
a plain word, text full of regex metacharacters, a long value, the hole's own source) and
checks that the pattern finds each rendering; a pattern whose literal text is too little to
tell the message apart fails it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from diagnose.matching.literals import required_literal
from diagnose.records.mine.pieces import Hole, Lit, Piece, Pieces
from diagnose.records.patterns import pattern_error

ANY = ".*?"
INT = r"-?\d+"
MIN_WORD_CHARS = 8  # letters and digits of literal text a pattern needs to name one message
MAX_LITERAL_CHARS = 400  # of one line: a longer message is recognised by its beginning
_SPECIAL = re.compile(r"[.^$*+?{}\[\]|()\\]")
_CONTROL = {"\n": r"\n", "\t": r"\t", "\r": r"\r", "\f": r"\f", "\v": r"\v"}


def escape(text: str) -> str:
    """``text`` as a regex that matches it exactly; spaces and ``:,'"-`` stay as they are."""
    out = _SPECIAL.sub(lambda m: "\\" + m.group(), text)
    if any(ord(c) < 32 or c == "\x7f" for c in out):
        out = "".join(
            _CONTROL.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 32 or c == "\x7f" else c)
            for c in out
        )
    return out


def literal_regex(text: str, rendering: str = "str") -> str:
    """The regex of a literal as the user sees it.

    A ``repr`` rendering (``KeyError: 'x'``) escapes backslashes and control characters, and
    escapes ``'`` only when the whole message also holds a ``"``, which a hole's value may
    decide: so each ``'`` may or may not have a backslash before it.
    """
    if rendering != "repr":
        return escape(text)
    body = repr(text + '"')[1:-2]  # quoted with ', so that every ' comes out as \'
    return escape(body).replace("\\\\'", "\\\\?'")


def _lines(pieces: Pieces) -> list[list[Piece]]:
    """The pieces split at the newlines inside their literals."""
    lines: list[list[Piece]] = [[]]
    for piece in pieces:
        if isinstance(piece, Hole):
            lines[-1].append(piece)
            continue
        first, *rest = piece.text.split("\n")
        if first:
            lines[-1].append(Lit(first))
        for text in rest:
            lines.append([Lit(text)] if text else [])
    return lines


_NOT_WORD = re.compile(r"[\W_]+")


def _word_chars(line: list[Piece]) -> int:
    return sum(len(_NOT_WORD.sub("", p.text)) for p in line if isinstance(p, Lit))


def _trimmed(line: list[Piece]) -> list[Piece]:
    """Holes off both ends; blanks off the ends of the literals left at the ends."""
    while line and isinstance(line[0], Hole):
        line = line[1:]
    while line and isinstance(line[-1], Hole):
        line = line[:-1]
    if not line:
        return []
    line = list(line)
    line[0] = Lit(line[0].text.lstrip())  # type: ignore[union-attr]
    line[-1] = Lit(line[-1].text.rstrip())  # type: ignore[union-attr]
    return [p for p in line if not (isinstance(p, Lit) and not p.text)]


def pattern_line(pieces: Pieces) -> list[Piece]:
    """The line of the message the pattern is made of (see the module docstring)."""
    lines = [_trimmed(line) for line in _lines(pieces)]
    best = max(lines, key=_word_chars)
    first = lines[0]
    return first if _word_chars(first) >= min(MIN_WORD_CHARS, _word_chars(best)) else best


def _capped(line: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    total = 0
    for piece in line:
        if isinstance(piece, Lit):
            if total + len(piece.text) >= MAX_LITERAL_CHARS:
                out.append(Lit(piece.text[: MAX_LITERAL_CHARS - total]))
                break
            total += len(piece.text)
        out.append(piece)
    return out


def build_pattern(pieces: Pieces, rendering: str = "str") -> str:
    """The ``messagePattern`` of a message made of ``pieces``."""
    parts: list[str] = []
    run: list[Hole] = []

    def flush() -> None:
        if run:
            parts.append(ANY if any(h.kind == "any" for h in run) else INT * len(run))
            run.clear()

    for piece in _capped(pattern_line(pieces)):
        if isinstance(piece, Hole):
            run.append(piece)
        else:
            flush()
            parts.append(literal_regex(piece.text, rendering))
    flush()
    return "".join(parts)


def render(pieces: Pieces, fill: Callable[[Hole], str], rendering: str = "str") -> str:
    """The message as the library would print it with ``fill(hole)`` for each hole."""
    text = "".join(p.text if isinstance(p, Lit) else fill(p) for p in pieces)
    return repr(text) if rendering == "repr" else text


def sample_message(pieces: Pieces, rendering: str = "str") -> str:
    """A readable instance: each hole shown as ``<its source>`` (integers as ``0``)."""
    return render(pieces, lambda h: "0" if h.kind == "int" else f"<{h.source}>", rendering)


_FILLS: tuple[Callable[[Hole], str], ...] = (
    lambda h: "0" if h.kind == "int" else "",
    lambda h: "7" if h.kind == "int" else "value",
    lambda h: "-12" if h.kind == "int" else "a.b(c) [d] {e} *+?|^$ \\ 'q' \"Q\"",
    lambda h: "1234567890" if h.kind == "int" else "long value " * 20,
    lambda h: "0" if h.kind == "int" else f"<{h.source}>",
)


@dataclass(frozen=True, slots=True)
class Tested:
    """A pattern and its self-test verdict: ``failure`` is None when it passed."""

    pattern: str
    message: str
    failure: str | None


def made_and_tested(pieces: Pieces, rendering: str = "str") -> Tested:
    """Build the pattern of ``pieces`` and test it against renderings of its own message."""
    pattern = build_pattern(pieces, rendering)
    message = sample_message(pieces, rendering)
    if _word_chars(pattern_line(pieces)) < MIN_WORD_CHARS:
        return Tested(pattern, message, "too little literal text to tell the message apart")
    reason = pattern_error(pattern)
    if reason is not None:
        return Tested(pattern, message, f"pattern does not compile: {reason}")
    if required_literal(pattern) is None:
        return Tested(pattern, message, "pattern has no literal the matcher can index")
    compiled = re.compile(pattern)
    for fill in _FILLS:
        rendered = render(pieces, fill, rendering)
        if compiled.search(rendered) is None:
            return Tested(pattern, message, f"pattern does not match its own message {rendered!r}")
    return Tested(pattern, message, None)
