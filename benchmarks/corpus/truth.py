"""Ground truth by construction: what a case's operator did and what a diagnosis must say.

The truth comes from the operator alone (never from what the tool answers): the symptom id it
should rank first (``family``), the fix ids that remove the cause (``fixes``, best first), and,
where the fault makes a non-finite value at one place, that place (the producer's module in the
root model and its line in the generated script).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Truth:
    operator: str
    healthy: bool
    family: str | None  # the symptom id to rank first; None for a healthy case
    fixes: tuple[str, ...]  # accepted fix ids, the expected one first
    what: str  # what the operator did, in words
    line: int | None = None  # the producer's line in the generated script
    module: str | None = None  # its module path in the root model ("" for the root itself)
    root: str | None = None  # the script's name for the root model

    def to_json(self) -> dict:
        return asdict(self)


def locate(code: str, original: str, fragment: str) -> int:
    """The 1-based line of ``code`` holding ``fragment`` that the original script did not have.

    An operator names a fragment of what it wrote; the line is read off the generated text, so
    it stays right whatever the rest of the edit moved."""
    before = set(original.splitlines())
    for number, text in enumerate(code.splitlines(), start=1):
        if fragment in text and text not in before:
            return number
    raise ValueError(f"the generated script has no new line holding {fragment!r}")


# A crashing script's families and fixes as DESIGN.md names them ("explained from the live
# run"); the other families are the symptom ids the tool registers (diagnose/facts/symptoms).
CRASH_FAMILIES = {
    "shape-mismatch": "fix-layer-size",
    "dtype-mismatch": "cast-dtype",
    "inplace-modified-saved-tensor": "make-op-out-of-place",
    "backward-through-graph-twice": "detach-carried-state",
    "graph-cut-before-backward": "restore-gradient-flow",
    "index-out-of-range": "fix-label-range",
}

# Families a fault operator has that the tool does not claim yet (family -> fix): scored as wrong
# until it does. Empty while every operator's family is the tool's own.
PROPOSED_FAMILIES: dict[str, str] = {}
