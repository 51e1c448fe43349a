"""Comments on the lines a patch changes, kept true.

A patch that turns ``.half()`` into ``.bfloat16()`` on a line commented ``# fp16 everywhere``
would leave the comment saying the opposite of the code. Only the comments of changed lines
are touched, and only the words naming what the patch replaced.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Mapping


def refresh_comments(old: str, new: str, words: Mapping[str, str]) -> str:
    """``new`` with each word of ``words`` (a whole word, any case) replaced by its value in
    the comments of the lines that differ from ``old``. Source that does not tokenize is
    returned as it is: a comment is never worth a broken patch."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    changed = _changed_rows(old_lines, new_lines)
    if not changed or not words:
        return new
    try:
        comments = [
            token
            for token in tokenize.generate_tokens(io.StringIO(new).readline)
            if token.type == tokenize.COMMENT and token.start[0] in changed
        ]
    except (tokenize.TokenError, SyntaxError):
        return new
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")\b",
        re.IGNORECASE,
    )
    lookup = {w.lower(): v for w, v in words.items()}
    for token in comments:
        row, col = token.start
        line = new_lines[row - 1]
        text = pattern.sub(lambda m: lookup[m.group(0).lower()], token.string)
        new_lines[row - 1] = line[:col] + text + line[col + len(token.string) :]
    return "".join(new_lines)


def _changed_rows(old_lines: list[str], new_lines: list[str]) -> set[int]:
    """The 1-based rows of ``new_lines`` that a diff from ``old_lines`` replaced or added."""
    rows: set[int] = set()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            rows.update(range(j1 + 1, j2 + 1))
    return rows
