"""A tolerant C/C++/CUDA tokenizer: enough to find macro calls and read their string literals.

Not a C++ parser: one regular expression splits the text into identifiers, string and
character literals (raw strings ``R"d(...)d"`` and the ``u8``/``L``/``u``/``U`` prefixes
too), numbers and punctuation, and drops blanks, comments and preprocessor directives (with
their ``\\`` continuations), except a ``#define``'s body, which is tokenized as code: a
check inside a macro (``#define ADDMM_META() TORCH_CHECK(...)``) is a site, the macro's own
name and parameters (``#define TORCH_CHECK(cond, ...)``) are not.
Text it cannot read (an unterminated literal) becomes punctuation and scanning goes on:
a broken file yields fewer sites, never an error.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""(?P<ws>[ \t\r\n\f\v]+|\\\r?\n)
    |(?P<comment>//(?:[^\n\\]|\\.|\\\n)*|/\*.*?\*/)
    |(?P<pp>\#(?:[^\n\\/]|\\.|\\\n|/\*.*?\*/|/(?![/*]))*(?://[^\n]*)?)
    |(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\((?P<body>.*?)\)(?P=delim)")
    |(?P<str>(?:u8|[uUL])?"(?:[^"\\\n]|\\.|\\\n)*")
    |(?P<chr>(?:u8|[uUL])?'(?:[^'\\\n]|\\.){1,8}')
    |(?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
    |(?P<num>\.?[0-9](?:[eEpP][-+]|[A-Za-z0-9_.']|)*)
    |(?P<punct>::|->|[^\s])""",
    re.DOTALL | re.VERBOSE,
)
# "#define NAME" or "#define NAME(params)": what follows is the macro's body
_DEFINE = re.compile(r"\#[ \t]*define[ \t]+[A-Za-z_]\w*(?:\([^)\n]*\))?")
_ESCAPE = re.compile(
    r"\\(?:\n|[0-7]{1,3}|x[0-9A-Fa-f]+|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL
)
_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
    "\n": "",
    "e": "\x1b",
}


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` is ident, str, chr, num or punct; ``start``/``end`` are offsets."""

    kind: str
    text: str
    start: int
    end: int
    value: str | None = None  # a string literal's decoded text


def _unescape(match: re.Match[str]) -> str:
    body = match.group()[1:]
    simple = _SIMPLE.get(body)
    if simple is not None:
        return simple
    try:
        if body[0] in "01234567":
            return chr(int(body, 8))
        if body[0] in "xuU":
            return chr(int(body[1:], 16))
    except (ValueError, OverflowError):
        return ""
    return body  # an unknown escape keeps its character, as compilers do (with a warning)


def decode_string(token_text: str) -> str:
    """The text a (non-raw) string literal stands for."""
    quote = token_text.index('"')
    return _ESCAPE.sub(_unescape, token_text[quote + 1 : -1])


class Source:
    """A file's text, its tokens (blanks, comments and directives left out) and its lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[Token] = []
        self.gaps: list[bool] = []  # whether blanks or comments came before each token
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._scan(0, len(text))

    def _scan(self, start: int, end: int) -> None:
        text = self.text
        gap = True
        for m in _TOKEN.finditer(text, start, end):
            kind = m.lastgroup or "punct"
            if kind == "pp":
                define = _DEFINE.match(text, m.start(), m.end())
                if define is not None:  # a macro's body is code: its checks are sites
                    self._scan(define.end(), m.end())
                gap = True
                continue
            if kind in ("ws", "comment"):
                gap = True
                continue
            value = None
            if kind == "raw":
                kind, value = "str", m.group("body")
            elif kind == "str":
                value = decode_string(m.group())
            self.tokens.append(Token(kind, m.group(), m.start(), m.end(), value))
            self.gaps.append(gap)
            gap = False

    def line_of(self, offset: int) -> int:
        """1-based line of a character offset."""
        return bisect_right(self._newlines, offset - 1) + 1
