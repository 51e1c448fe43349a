"""Symptoms of one op's numerics: log, division, roots, exp and pow outside their domain.

These also read autograd's anomaly error, which names the backward op that made the nan.
"""

from __future__ import annotations

import math

from diagnose.facts.extract import Facts
from diagnose.facts.heuristics import DTYPE_MAX, DTYPE_SHORT
from diagnose.facts.symptoms.evidence import driven_by_lr, op_line
from diagnose.facts.symptoms.registry import symptom
from diagnose.formatting import num
from diagnose.report import Report, Symptom


@symptom(
    "log-domain",
    title="log of zero or of a negative number",
    related_tags=["anomaly-detection", "numerical-stability", "nan"],
    anomaly=True,
)
def log_domain(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "log":
        return None
    value = f.get("event.op_value") or f.get("event.value") or ""
    zero, negative = f.get("op_input.has_zero"), f.get("op_input.has_negative")
    if zero and (not negative or "inf" in value):
        confidence, what = 0.95, f"its input holds 0 (|x| min {num(f.get('op_input.min_abs'))})"
    elif negative:
        confidence, what = (
            0.95,
            f"its input holds negative numbers (min {num(f.get('op_input.min'))})",
        )
    elif value == "-inf":
        confidence, what = 0.9, "log gives -inf only at 0"
    elif "nan" in value:
        confidence, what = 0.85, "log gives nan for negative input"
    else:
        confidence, what = 0.75, "log is undefined at 0 and below"
    if f.get("event.in_backward"):
        what += "; its gradient 1/x is inf there"
    return Symptom(id="log-domain", confidence=confidence, evidence=[op_line(f, what)])


@symptom(
    "division-by-zero",
    title="division by zero",
    related_tags=["anomaly-detection", "numerical-stability", "nan"],
    anomaly=True,
)
def division_by_zero(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "div":
        return None
    if f.get("op_input.divisor_has_zero"):
        confidence, what = 0.95, "the divisor holds 0"
    elif f.get("op_input.has_zero"):
        confidence, what = 0.85, "an input holds 0"
    elif f.get("event.in_backward") and _gradient_overflows(f):
        confidence = 0.85
        what = (
            f"the divisor is as small as {num(f.get('op_input.divisor_min_abs'))}: the "
            "gradient -a/b^2 overflows"
        )
    elif (f.get("op_input.divisor_min_abs") or 1.0) < 1e-30:
        confidence, what = (
            0.8,
            f"the divisor is as small as {num(f.get('op_input.divisor_min_abs'))}",
        )
    elif f.get("op_input.divisor_has_zero") is False:
        confidence, what = 0.3, "the divisor has no zero; the numerator may be huge"
    else:
        confidence, what = 0.7, "x/0 is inf and 0/0 is nan"
    return Symptom(id="division-by-zero", confidence=confidence, evidence=[op_line(f, what)])


def _gradient_overflows(f: Facts) -> bool:
    """Whether a/b^2 (the gradient of a/b w.r.t. b) can pass the dtype's limit."""
    divisor, numerator = f.get("op_input.divisor_min_abs"), f.get("op_input.max_abs")
    limit = DTYPE_MAX.get(str(f.get("event.dtype") or "float32"), DTYPE_MAX["float32"])
    if divisor is None or numerator is None or divisor == 0:
        return False
    return numerator / (divisor * divisor) > limit


@symptom(
    "sqrt-at-zero",
    title="sqrt at zero (or of a negative number)",
    related_tags=["anomaly-detection", "backward", "nan"],
    anomaly=True,
)
def sqrt_at_zero(f: Facts, report: Report) -> Symptom | None:
    # x ** 0.5 and acos/asin at +-1 are the domains family's (domain-edge)
    backward = bool(f.get("event.in_backward"))
    if f.get("event.op_family") != "sqrt":
        return None
    if backward:
        if f.get("op_input.has_zero"):
            confidence, what = 0.95, "its input holds 0, where d sqrt(x)/dx = 1/(2 sqrt(x)) is inf"
        else:
            confidence, what = 0.8, "the gradient of sqrt (or a norm) is inf at 0"
    elif f.get("op_input.has_negative"):
        confidence, what = (
            0.9,
            f"its input holds negative numbers (min {num(f.get('op_input.min'))})",
        )
    elif f.get("event.has_nan"):
        confidence, what = 0.7, "sqrt gives nan for negative input"
    else:
        confidence, what = 0.5, "sqrt is undefined below 0"
    return Symptom(id="sqrt-at-zero", confidence=confidence, evidence=[op_line(f, what)])


@symptom(
    "exp-overflow",
    title="exp overflow",
    related_tags=["overflow", "numerical-stability", "inf"],
    anomaly=True,
)
def exp_overflow(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "exp":
        return None
    dtype = f.get("event.dtype") or "float32"
    limit = math.log(DTYPE_MAX.get(dtype, DTYPE_MAX["float32"]))
    largest = f.get("op_input.max_abs")
    name = DTYPE_SHORT.get(dtype, dtype)
    if largest is not None and largest > limit:
        confidence = 0.95
        what = f"its input reaches {num(largest)} and exp overflows {name} above {limit:.1f}"
    elif f.get("event.has_inf"):
        confidence, what = 0.8, f"exp overflows {name} above {limit:.1f}"
    else:
        confidence, what = 0.5, "exp of a large input"
    evidence = [op_line(f, what)]
    confidence = driven_by_lr(f, confidence, evidence, "its input grew")
    return Symptom(id="exp-overflow", confidence=confidence, evidence=evidence)


@symptom(
    "pow-negative-base",
    title="pow with a negative base",
    related_tags=["anomaly-detection", "numerical-stability", "nan"],
    anomaly=True,
)
def pow_negative_base(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "pow" or not f.get("event.has_nan"):
        return None
    negative = f.get("op_input.has_negative")
    if negative is False and f.get("event.in_backward"):
        return None  # a gradient born at a zero base: see sqrt_at_zero
    if negative:
        confidence, what = (
            0.9,
            f"the base holds negative numbers (min {num(f.get('op_input.min'))})",
        )
    elif negative is None:
        confidence, what = 0.6, "a negative base to a fractional power gives nan"
    else:
        confidence, what = 0.2, "the base has no negative numbers"
    return Symptom(id="pow-negative-base", confidence=confidence, evidence=[op_line(f, what)])
