"""Line endings: patches are made on ``\\n`` text, the user's file keeps its own endings.

The patchers see the script as Python reads it (universal newlines: ``\\r\\n`` and ``\\r``
become ``\\n``), so their output has ``\\n`` everywhere. Written back as is, a Windows script
would lose every ``\\r\\n``. ``decode_source`` gives the text the patchers see;
``restore_endings`` puts the original endings back: each line the patch left alone keeps its
own ending (a file with mixed endings stays mixed), a changed line keeps the ending of the line
it replaces, and a line the patch added takes the file's most common ending.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

_ENDING = re.compile(r"\r\n|\r|\n")


def decode_source(data: bytes) -> str:
    """The script's text as the patchers read it: UTF-8, universal newlines."""
    return _ENDING.sub("\n", data.decode("utf-8"))


def restore_endings(original: str, patched: str) -> str:
    """``patched`` (``\\n`` endings, made from ``original``'s text) with ``original``'s endings."""
    old_lines, old_ends = _split(original)
    if all(end in ("\n", "") for end in old_ends):
        return patched
    new_lines, new_ends = _split(patched)
    default = _most_common(old_ends)
    ends = [default if end else "" for end in new_ends]
    for old_at, new_at in _matching_lines(old_lines, new_lines):
        if new_ends[new_at]:
            ends[new_at] = old_ends[old_at] or default
    return "".join(line + end for line, end in zip(new_lines, ends, strict=True))


def _split(text: str) -> tuple[list[str], list[str]]:
    """Lines and their endings ("" for a last line without one)."""
    parts = _ENDING.split(text)
    endings = _ENDING.findall(text)
    lines, ends = parts[:-1], endings
    if parts[-1]:
        lines, ends = parts, [*endings, ""]
    return lines, ends


def _most_common(ends: list[str]) -> str:
    counts = Counter(end for end in ends if end)
    return counts.most_common(1)[0][0] if counts else "\n"


def _matching_lines(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """Pairs (old index, new index) of the lines that correspond: the same lines, and the
    lines of a changed block one for one from its start.

    The common head and tail are matched directly, so only the patched middle goes through
    difflib and the time stays bounded on long scripts.
    """
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    pairs = [(i, i) for i in range(head)]
    pairs += [(len(old) - 1 - k, len(new) - 1 - k) for k in range(tail)]
    old_mid, new_mid = old[head : len(old) - tail], new[head : len(new) - tail]
    matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "replace"):
            pairs += [(head + i1 + k, head + j1 + k) for k in range(min(i2 - i1, j2 - j1))]
    return pairs
