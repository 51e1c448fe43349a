"""Shared wording and confidence arithmetic of the detectors: where, what came out, noisy-OR."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.formatting import num


def noisy_or(*parts: float) -> float:
    result = 1.0
    for p in parts:
        result *= 1.0 - max(0.0, min(1.0, p))
    return 1.0 - result


def place(f: Facts) -> str:
    bits = []
    if f.get("event.module"):
        kind = f" ({f['event.module_type']})" if f.get("event.module_type") else ""
        bits.append(f"in {f['event.module']}{kind}")
    if f.get("event.location"):
        bits.append(f"at {f['event.location']}")
    if isinstance(f.get("event.step"), int):
        bits.append(f"at step {f['event.step']}")
    return " ".join(bits)


def value_of(f: Facts) -> str:
    return _worded(f.get("event.value")) or "a non-finite value"


def _worded(value: object) -> str | None:
    """A report's value as a sentence says it ("inf+-inf": both signs came out)."""
    if not value:
        return None
    return "inf and -inf" if value == "inf+-inf" else str(value)


def op_line(f: Facts, what: str) -> str:
    """ "the first -inf came out of log at train.py:24 ...": worded from what the op itself
    returned, saying so when the value that was caught (a nan loss) came from it later."""
    op = f.get("event.op") or f.get("event.op_base")
    where = place(f)
    direction = " in backward" if f.get("event.in_backward") else ""
    own, caught = f.get("event.op_value"), f.get("event.value")
    line = f"the first {_worded(own) or value_of(f)} came out of {op}{direction} {where}".rstrip()
    if own and caught and own != caught:
        became = "the loss" if f.get("event.phase") == "loss" else "the value caught"
        line += f" ({became} became {_worded(caught)} after it)"
    return line + f": {what}"


def driven_by_lr(f: Facts, confidence: float, evidence: list[str], what: str) -> float:
    """A symptom that updates two orders of magnitude too large drove (after at least one
    update): it is what the lr did, so it ranks below lowering the lr (lr-too-high is 0.9)."""
    usual = f.get("lr_vs_usual")  # the figure lr-too-high and the lr fix go by
    ratio = usual if usual is not None else f.get("lr_vs_typical")
    if ratio is None or ratio < 100 or (f.get("event.step") or 0) < 1:
        return confidence
    of = f"({f.get('lr.usual_source')})" if usual is not None else f"for {f.get('optimizer')}"
    evidence.append(f"{what} under an lr {num(ratio)}x the usual {of}")
    return confidence * 0.85
