"""Symptoms of an op used at the edge of its domain: a fractional power at 0, acos/asin at +-1.

Both are finite in forward at the edge (0 ** 0.5 = 0, acos(1) = 0) and have an infinite
derivative there (p x^(p-1) at 0 for 0 < p < 1; -+1/sqrt(1 - x^2) at +-1), so the nan is born
in backward from a healthy-looking forward; acos/asin just past +-1 (a cosine similarity that
rounds to 1 + 1e-7) are nan in forward as well.
"""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.evidence import op_line
from diagnose.facts.symptoms.registry import symptom
from diagnose.formatting import num
from diagnose.report import Report, Symptom

_ARC = ("acos", "asin")


def fractional_exponent(report: Report) -> float | None:
    """The plain exponent 0 < p < 1 the producing pow was given (``x ** 0.5``, ``pow(x, 0.3)``),
    None when it had none (a tensor exponent) or another one."""
    numbers = (report.event.op_numbers if report.event else None) or []
    return next((p for p in numbers if 0 < p < 1), None)


def _arc_edge(f: Facts) -> tuple[float, str] | None:
    largest = f.get("op_input.max_abs")
    name = f.get("event.op_base")
    if f.get("event.in_backward"):
        if largest is not None and largest >= 1:
            return 0.95, f"its input reaches {num(largest)}, where d {name}(x)/dx is infinite"
        return 0.85, f"the derivative of {name}, -+1/sqrt(1 - x^2), is infinite at +-1"
    if largest is not None and largest > 1:
        return (
            0.95,
            f"|its input| exceeds 1 (up to {num(largest)}, by rounding), where {name} is nan",
        )
    if f.get("event.has_nan"):
        return 0.8, f"{name} is nan outside [-1, 1]"
    return None


def _power_edge(f: Facts, report: Report) -> tuple[float, str] | None:
    if not f.get("event.in_backward") or not f.get("op_input.has_zero"):
        return None
    if f.get("op_input.has_negative"):
        return None  # a negative base is nan already in forward: pow-negative-base
    p = fractional_exponent(report)
    if p is not None:
        return 0.95, (
            f"its base holds 0 and its exponent is {num(p)}: the derivative "
            f"{num(p)} x^{num(p - 1)} is infinite at 0"
        )
    if report.event and report.event.op_numbers:
        return None  # a plain exponent of 1 or more has a finite derivative at 0
    return 0.8, "its base holds 0, where the derivative of a fractional power is infinite"


@symptom(
    "domain-edge",
    title="a fractional power at 0, or acos/asin at +-1",
    related_tags=["anomaly-detection", "backward", "nan"],
    anomaly=True,
)
def domain_edge(f: Facts, report: Report) -> Symptom | None:
    base, family = f.get("event.op_base"), f.get("event.op_family")
    if base in _ARC:
        found = _arc_edge(f)
    elif family == "pow":
        found = _power_edge(f, report)
    else:
        return None
    if found is None:
        return None
    confidence, what = found
    return Symptom(id="domain-edge", confidence=confidence, evidence=[op_line(f, what)])
