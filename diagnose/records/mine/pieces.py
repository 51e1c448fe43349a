"""A message as its source spells it: literal text and the holes filled in at run time.

Every site scanner (Python's ``ast``, the C++ macro scanner) reduces a message argument to a
tuple of pieces; ``pattern.py`` turns them into a ``messagePattern`` and renders the sample
messages the pattern is tested against. A hole knows only what the source says about its
value: ``int`` for ``%d`` / ``{:d}`` (always digits), ``any`` otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal as TypingLiteral

HoleKind = TypingLiteral["any", "int"]


@dataclass(frozen=True, slots=True)
class Lit:
    """Text that appears in every rendering of the message, exactly."""

    text: str


@dataclass(frozen=True, slots=True)
class Hole:
    """A value filled in at run time; ``source`` is the expression that makes it."""

    source: str
    kind: HoleKind = "any"


Piece = Lit | Hole
Pieces = tuple[Piece, ...]


def joined(parts: Iterable[Piece | Pieces]) -> Pieces:
    """Flatten and tidy: adjacent literals merged, empty literals dropped.

    Adjacent holes are kept (``{a}{b}`` renders two values); the pattern merges them.
    """
    out: list[Piece] = []
    for part in parts:
        for piece in part if isinstance(part, tuple) else (part,):
            if isinstance(piece, Lit):
                if not piece.text:
                    continue
                if out and isinstance(out[-1], Lit):
                    out[-1] = Lit(out[-1].text + piece.text)
                    continue
            out.append(piece)
    return tuple(out)


def literal_text(pieces: Pieces) -> str:
    """The literal text alone, holes left out (what a reader recognises the message by)."""
    return "".join(p.text for p in pieces if isinstance(p, Lit))


def hole(source: str, kind: HoleKind = "any", limit: int = 80) -> Hole:
    """A hole whose source is shortened for display (the value it stands for is unknown)."""
    text = " ".join(source.split())
    return Hole(text if len(text) <= limit else text[: limit - 3] + "...", kind)
