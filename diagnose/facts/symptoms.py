"""Facts -> symptoms: what went wrong, how sure we are (0..1), and the evidence in plain words.

Each detector reads the facts (and, for wording, the report) and returns one Symptom or None.
Confidences are hand-set heuristics: strong, direct evidence (the op and its input statistics,
an activation at the dtype's limit) scores 0.85-0.95; indirect evidence (a setting that is
unusual, a trend) scores less and adds up through a noisy-OR. The rules in ``rules/`` decide
which fixes a symptom supports; nothing here knows about fixes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from diagnose.facts.extract import Facts
from diagnose.facts.heuristics import DTYPE_MAX, DTYPE_SHORT, threshold
from diagnose.learning.findings import TITLES as LEARNING_TITLES
from diagnose.learning.findings import detect_learning_symptoms
from diagnose.report import Report, Symptom

TITLES: dict[str, str] = {
    "fp16-overflow": "fp16 overflow",
    "adam-eps-underflow": "Adam's eps rounds to 0 in fp16",
    "lr-too-high": "learning rate too high",
    "exploding-gradients": "exploding gradients",
    "no-grad-clipping": "no gradient clipping",
    "clip-before-unscale": "gradients clipped before unscale_",
    "log-domain": "log of zero or of a negative number",
    "division-by-zero": "division by zero",
    "sqrt-at-zero": "sqrt at zero (or of a negative number)",
    "exp-overflow": "exp overflow",
    "pow-negative-base": "pow with a negative base",
    "number-beyond-dtype": "a constant the dtype cannot hold",
    "eps-below-dtype": "an eps that is 0 in the dtype",
    "nonfinite-input": "non-finite values in the input batch",
    "nonfinite-targets": "non-finite values in the targets",
    "all-targets-ignored": "all targets ignored (loss is a mean over nothing)",
    "loss-scale-collapse": "loss scaler collapsing",
    "bad-initialization": "bad initialisation",
    "script-exception": "the script raised an exception",
}
TITLES.update(LEARNING_TITLES)


def fmt(x: float | None) -> str:
    """Numbers as people write them: 6.3e4, 0.001, 12.5."""
    if x is None:
        return "?"
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    a = abs(x)
    if 100 <= a < 1e4:
        return f"{x:.0f}"
    if 1e-3 <= a < 100:
        return f"{x:.3g}"
    mantissa, exponent = f"{x:.1e}".split("e")
    mantissa = mantissa.removesuffix(".0")
    return f"{mantissa}e{int(exponent)}"


def _noisy_or(*parts: float) -> float:
    result = 1.0
    for p in parts:
        result *= 1.0 - max(0.0, min(1.0, p))
    return 1.0 - result


def _where(f: Facts) -> str:
    bits = []
    if f.get("event.module"):
        kind = f" ({f['event.module_type']})" if f.get("event.module_type") else ""
        bits.append(f"in {f['event.module']}{kind}")
    if f.get("event.location"):
        bits.append(f"at {f['event.location']}")
    if isinstance(f.get("event.step"), int):
        bits.append(f"at step {f['event.step']}")
    return " ".join(bits)


def _value(f: Facts) -> str:
    return _worded(f.get("event.value")) or "a non-finite value"


def _worded(value: object) -> str | None:
    """A report's value as a sentence says it ("inf+-inf": both signs came out)."""
    if not value:
        return None
    return "inf and -inf" if value == "inf+-inf" else str(value)


def _op_line(f: Facts, what: str) -> str:
    """ "the first -inf came out of log at train.py:24 ...": worded from what the op itself
    returned, saying so when the value that was caught (a nan loss) came from it later."""
    op = f.get("event.op") or f.get("event.op_base")
    where = _where(f)
    direction = " in backward" if f.get("event.in_backward") else ""
    own, caught = f.get("event.op_value"), f.get("event.value")
    line = f"the first {_worded(own) or _value(f)} came out of {op}{direction} {where}".rstrip()
    if own and caught and own != caught:
        became = "the loss" if f.get("event.phase") == "loss" else "the value caught"
        line += f" ({became} became {_worded(caught)} after it)"
    return line + f": {what}"


# --- precision --------------------------------------------------------------------------------


def fp16_overflow(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.phase") == "input":
        return None
    fp16 = bool(f.get("precision.fp16")) or f.get("activation.dtype") == "float16"
    if not fp16:
        return None
    evidence: list[str] = []
    parts: list[float] = []
    ratio = f.get("dtype.max_abs_ratio") if f.get("activation.dtype") == "float16" else None
    if ratio is not None and ratio >= 0.1:
        parts.append(0.95 if ratio >= 0.9 else 0.85 if ratio >= 0.5 else 0.6)
        where = f" at {f['activation.module']}" if f.get("activation.module") else ""
        before = f.get("activation.steps_before_event")
        when = (
            f", {before} step{'s' if before != 1 else ''} before the {_value(f)}"
            if isinstance(before, int)
            else ""
        )
        evidence.append(
            f"activation |x| max {fmt(f.get('activation.max_abs'))} in fp16{where}, "
            f"{ratio:.0%} of the range (65504){when}"
        )
    loss_ratio = f.get("loss.fp16_ratio")
    if loss_ratio is not None and loss_ratio >= 0.1:
        parts.append(0.85 if loss_ratio >= 0.5 else 0.5)
        evidence.append(
            f"loss reached {fmt(f.get('loss.max_abs'))}, {loss_ratio:.0%} of fp16's range"
        )
    if f.get("event.dtype") == "float16" and f.get("event.has_inf"):
        largest = f.get("op_input.max_abs")
        if f.get("event.op_family") == "reduce" and largest is not None and largest < 65504:
            parts.append(0.85)
            evidence.append(
                f"{f.get('event.op')} of fp16 values no larger than {fmt(largest)} passed "
                f"fp16's limit 65504 {_where(f)}".rstrip()
            )
        else:
            parts.append(0.6)
            evidence.append(f"the first inf was born in float16 {_where(f)}".rstrip())
    if not parts:
        return None
    confidence = _noisy_or(*parts)
    if f.get("event.op_family") in ("exp", "log", "div", "sqrt", "pow"):
        confidence = min(confidence, 0.6)  # the op-level symptom is the more specific cause
    return Symptom(id="fp16-overflow", confidence=min(confidence, 0.97), evidence=evidence)


def adam_eps_underflow(f: Facts, report: Report) -> Symptom | None:
    if not f.get("adam.eps_underflows"):
        return None
    if f.get("event.step") == 0 and f.get("event.phase") != "optimizer":
        return None  # the optimizer has not run yet: its eps cannot be the cause
    confidence = 0.9 if f.get("adam.eps_known") else 0.75
    if f.get("event.phase") == "optimizer":
        confidence = _noisy_or(confidence, 0.5)
    default = "" if f.get("adam.eps_known") else " (the optimizer's default)"
    return Symptom(
        id="adam-eps-underflow",
        confidence=min(confidence, 0.95),
        evidence=[
            f"{f.get('optimizer')} eps={fmt(f.get('adam.eps'))}{default} is 0 in fp16 "
            "(the smallest fp16 number is 6e-8): sqrt(v) + eps can be 0 and the update divides by it"
        ],
    )


def loss_scale_collapse(f: Facts, report: Report) -> Symptom | None:
    last = f.get("loss_scale.last")
    if last is None:
        return None
    drop = f.get("loss_scale.drop") or 1.0
    skipped = f.get("skipped.consecutive_at_end") or 0
    if last < threshold("scale_collapse_below", 1.0):
        confidence = 0.9
    elif drop >= threshold("scale_collapse_drop", 256.0):
        confidence = 0.8 if skipped >= 5 else 0.6
    else:
        return None
    return Symptom(
        id="loss-scale-collapse",
        confidence=confidence,
        evidence=[
            f"the GradScaler's scale fell from {fmt(f.get('loss_scale.first'))} to {fmt(last)} "
            f"({f.get('skipped_steps', 0)} skipped steps, {skipped} in a row at the end): "
            "the gradients are inf or nan at every scale"
        ],
    )


def clip_before_unscale(f: Facts, report: Report) -> Symptom | None:
    if not f.get("scaler.clip_before_unscale"):
        return None
    scale = f.get("loss_scale.last")
    times = f" ~{fmt(scale)}x" if scale else ""
    return Symptom(
        id="clip-before-unscale",
        confidence=0.9,
        evidence=[
            f"gradients are clipped (max {fmt(f.get('grad_clip.max'))}) before scaler.unscale_: "
            f"the threshold acts on gradients scaled{times}, so it clips far too much or not at all"
        ],
    )


# --- optimisation -----------------------------------------------------------------------------


def lr_too_high(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.step") == 0 and f.get("event.phase") != "optimizer":
        return None  # no update has been applied yet: the lr cannot have caused it
    if f.get("event.phase") == "input":
        return None  # the batch came in non-finite: no update made it so
    parts: list[float] = []
    evidence: list[str] = []
    ratio = f.get("lr_vs_typical")
    lr_note = (
        f"lr {fmt(f.get('lr'))} is {fmt(ratio)}x the usual {fmt(f.get('lr.typical'))} "
        f"for {f.get('optimizer')} ({f.get('lr.typical_source')})"
    )
    if ratio is not None and ratio >= 10:
        # Two orders of magnitude above the optimizer's usual lr is a cause on its own: the
        # trends and overflows that follow (exploding gradients, exp of a drifting input) are
        # what it does, so it ranks above the fixes that only treat them.
        parts.append(0.9 if ratio >= 100 else 0.45)
        evidence.append(lr_note)
    trend_parts: list[float] = []
    loss_trend, loss_rising = f.get("loss_trend"), f.get("loss.rising_steps", 0)
    if loss_trend is not None and loss_trend >= 3 and loss_rising >= 2:
        trend_parts.append(0.75 if loss_trend >= 10 and loss_rising >= 3 else 0.45)
        evidence.append(
            f"loss grew {fmt(loss_trend)}x over the last steps ({fmt(f.get('loss.first'))} -> "
            f"{fmt(f.get('loss.last'))}), rising {loss_rising} steps in a row before the event"
        )
    growth, rising = f.get("grad_norm_growth"), f.get("grad_norm.rising_steps", 0)
    if growth is not None and growth >= 3 and rising >= 2:
        trend_parts.append(0.6 if growth >= 10 and rising >= 3 else 0.3)
        evidence.append(f"gradient norm grew {fmt(growth)}x, rising {rising} steps in a row")
    weight_growth = f.get("weight_norm_growth")
    if weight_growth is not None and weight_growth >= 2:
        trend_parts.append(0.4)
        evidence.append(f"weight norm grew {fmt(weight_growth)}x over the last steps")
    update_ratio = f.get("update_ratio.max")
    if update_ratio is not None and update_ratio >= 0.1:
        trend_parts.append(0.5)
        evidence.append(
            f"update-to-weight ratio reached {fmt(update_ratio)} (around 1e-3 is usual)"
        )
    if not parts and not trend_parts:
        return None
    if trend_parts and ratio is not None and 3 <= ratio < 10:
        # A few times the default is common practice: it supports a divergence, alone it is none.
        parts.append(0.2)
        evidence.insert(0, lr_note)
    confidence = _noisy_or(*parts, *trend_parts)
    if ratio is not None and ratio <= 1.5:
        confidence *= 0.85  # a steady divergence at an ordinary lr: still the lr, less surely
    return Symptom(id="lr-too-high", confidence=min(confidence, 0.95), evidence=evidence)


def _driven_by_lr(f: Facts, confidence: float, evidence: list[str], what: str) -> float:
    """A symptom that updates two orders of magnitude too large drove (after at least one
    update): it is what the lr did, so it ranks below lowering the lr (lr-too-high is 0.9)."""
    ratio = f.get("lr_vs_typical")
    if ratio is None or ratio < 100 or (f.get("event.step") or 0) < 1:
        return confidence
    evidence.append(f"{what} under an lr {fmt(ratio)}x the usual for {f.get('optimizer')}")
    return confidence * 0.85


def exploding_gradients(f: Facts, report: Report) -> Symptom | None:
    parts: list[float] = []
    evidence: list[str] = []
    jump = threshold("sudden_jump", 100.0)
    # A spike after steady steps is the signature of one exploding gradient; a steady,
    # step-over-step growth is more the learning rate's (see lr_too_high).
    for name, label in (("loss", "loss"), ("grad_norm", "gradient norm")):
        last_jump = f.get(f"{name}.last_jump")
        if last_jump is not None and last_jump >= jump and f.get(f"{name}.rising_steps", 0) <= 1:
            parts.append(0.75)
            evidence.append(
                f"the {label} jumped {fmt(last_jump)}x in one step after steady steps: "
                "one huge gradient"
            )
            break
    growth = f.get("grad_norm_growth")
    if growth is not None and growth >= 10:
        parts.append(0.5)
        evidence.append(
            f"gradient norm grew {fmt(growth)}x over the last steps "
            f"({fmt(f.get('grad_norm.first'))} -> {fmt(f.get('grad_norm.last'))})"
        )
    largest = f.get("grad_norm.max")
    if largest is not None and largest >= threshold("grad_norm_huge", 1e4):
        parts.append(0.4)
        evidence.append(f"gradient norm reached {fmt(largest)}")
    if f.get("grad_norm.nonfinite"):
        parts.append(0.4)
        evidence.append("the gradient norm itself became non-finite")
    if (
        f.get("event.phase") in ("backward", "optimizer")
        and f.get("event.has_inf")
        and not f.get("event.op_family")
    ):
        parts.append(0.4)
        evidence.append(
            f"the first inf appeared in the {f['event.phase']} pass {_where(f)}".rstrip()
        )
    if not parts:
        return None
    confidence = _driven_by_lr(f, min(_noisy_or(*parts), 0.95), evidence, "they grew")
    return Symptom(id="exploding-gradients", confidence=confidence, evidence=evidence)


def no_grad_clipping(f: Facts, report: Report) -> Symptom | None:
    if f.get("grad_clip.enabled") or f.get("event.phase") == "input":
        return None
    if not f.get("history.steps") or f.get("event.step") == 0:
        return None  # before any update, clipping could not have changed anything
    if f.get("event.phase") not in ("backward", "optimizer") and not (
        lr_too_high(f, report) or exploding_gradients(f, report)
    ):
        return None  # a forward op's own fault (log(0), x/0, an fp16 eps): no update size in it
    confidence = 0.8 if f.get("config.captured") else 0.4
    return Symptom(
        id="no-grad-clipping",
        confidence=confidence,
        evidence=["no gradient clipping (clip_grad_norm_ / clip_grad_value_) was seen in the run"],
    )


def bad_initialization(f: Facts, report: Report) -> Symptom | None:
    if not f.get("weights.at_start"):
        return None
    if f.get("weights.nonfinite"):
        return Symptom(
            id="bad-initialization",
            confidence=0.95,
            evidence=["weights were already inf/nan before the first optimizer step"],
        )
    largest = f.get("weights.max_abs")
    if largest is not None and largest >= threshold("huge_initial_weight", 100.0):
        return Symptom(
            id="bad-initialization",
            confidence=0.75,
            evidence=[
                f"weights reach |w| = {fmt(largest)} before the first optimizer step "
                "(a usual initialisation keeps them below 1)"
            ],
        )
    return None


# --- numerics of one op -----------------------------------------------------------------------


def log_domain(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "log":
        return None
    value = f.get("event.op_value") or f.get("event.value") or ""
    zero, negative = f.get("op_input.has_zero"), f.get("op_input.has_negative")
    if zero and (not negative or "inf" in value):
        confidence, what = 0.95, f"its input holds 0 (|x| min {fmt(f.get('op_input.min_abs'))})"
    elif negative:
        confidence, what = (
            0.95,
            f"its input holds negative numbers (min {fmt(f.get('op_input.min'))})",
        )
    elif value == "-inf":
        confidence, what = 0.9, "log gives -inf only at 0"
    elif "nan" in value:
        confidence, what = 0.85, "log gives nan for negative input"
    else:
        confidence, what = 0.75, "log is undefined at 0 and below"
    if f.get("event.in_backward"):
        what += "; its gradient 1/x is inf there"
    return Symptom(id="log-domain", confidence=confidence, evidence=[_op_line(f, what)])


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
            f"the divisor is as small as {fmt(f.get('op_input.divisor_min_abs'))}: the "
            "gradient -a/b^2 overflows"
        )
    elif (f.get("op_input.divisor_min_abs") or 1.0) < 1e-30:
        confidence, what = (
            0.8,
            f"the divisor is as small as {fmt(f.get('op_input.divisor_min_abs'))}",
        )
    elif f.get("op_input.divisor_has_zero") is False:
        confidence, what = 0.3, "the divisor has no zero; the numerator may be huge"
    else:
        confidence, what = 0.7, "x/0 is inf and 0/0 is nan"
    return Symptom(id="division-by-zero", confidence=confidence, evidence=[_op_line(f, what)])


_ROOT_IN_DERIVATIVE = ("acos", "asin")  # d/dx = -+1/sqrt(1 - x^2): inf at +-1


def _gradient_overflows(f: Facts) -> bool:
    """Whether a/b^2 (the gradient of a/b w.r.t. b) can pass the dtype's limit."""
    divisor, numerator = f.get("op_input.divisor_min_abs"), f.get("op_input.max_abs")
    limit = DTYPE_MAX.get(str(f.get("event.dtype") or "float32"), DTYPE_MAX["float32"])
    if divisor is None or numerator is None or divisor == 0:
        return False
    return numerator / (divisor * divisor) > limit


def sqrt_at_zero(f: Facts, report: Report) -> Symptom | None:
    family, base = f.get("event.op_family"), f.get("event.op_base")
    backward = bool(f.get("event.in_backward"))
    if base in _ROOT_IN_DERIVATIVE and backward:
        what = "its input reaches +-1, where the derivative 1/sqrt(1 - x^2) is inf"
        return Symptom(id="sqrt-at-zero", confidence=0.9, evidence=[_op_line(f, what)])
    if family == "pow" and backward and f.get("op_input.has_zero"):
        # x ** p with 0 < p < 1 (x ** 0.5 is a sqrt): its derivative p x^(p-1) is inf at 0.
        what = "its base holds 0, where the derivative of a fractional power is inf"
        return Symptom(id="sqrt-at-zero", confidence=0.95, evidence=[_op_line(f, what)])
    if family != "sqrt":
        return None
    if backward:
        if f.get("op_input.has_zero"):
            confidence, what = 0.95, "its input holds 0, where d sqrt(x)/dx = 1/(2 sqrt(x)) is inf"
        else:
            confidence, what = 0.8, "the gradient of sqrt (or a norm) is inf at 0"
    elif f.get("op_input.has_negative"):
        confidence, what = (
            0.9,
            f"its input holds negative numbers (min {fmt(f.get('op_input.min'))})",
        )
    elif f.get("event.has_nan"):
        confidence, what = 0.7, "sqrt gives nan for negative input"
    else:
        confidence, what = 0.5, "sqrt is undefined below 0"
    return Symptom(id="sqrt-at-zero", confidence=confidence, evidence=[_op_line(f, what)])


def exp_overflow(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "exp":
        return None
    dtype = f.get("event.dtype") or "float32"
    limit = math.log(DTYPE_MAX.get(dtype, DTYPE_MAX["float32"]))
    largest = f.get("op_input.max_abs")
    name = DTYPE_SHORT.get(dtype, dtype)
    if largest is not None and largest > limit:
        confidence = 0.95
        what = f"its input reaches {fmt(largest)} and exp overflows {name} above {limit:.1f}"
    elif f.get("event.has_inf"):
        confidence, what = 0.8, f"exp overflows {name} above {limit:.1f}"
    else:
        confidence, what = 0.5, "exp of a large input"
    evidence = [_op_line(f, what)]
    confidence = _driven_by_lr(f, confidence, evidence, "its input grew")
    return Symptom(id="exp-overflow", confidence=confidence, evidence=evidence)


def pow_negative_base(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.op_family") != "pow" or not f.get("event.has_nan"):
        return None
    negative = f.get("op_input.has_negative")
    if negative is False and f.get("event.in_backward"):
        return None  # a gradient born at a zero base: see sqrt_at_zero
    if negative:
        confidence, what = (
            0.9,
            f"the base holds negative numbers (min {fmt(f.get('op_input.min'))})",
        )
    elif negative is None:
        confidence, what = 0.6, "a negative base to a fractional power gives nan"
    else:
        confidence, what = 0.2, "the base has no negative numbers"
    return Symptom(id="pow-negative-base", confidence=confidence, evidence=[_op_line(f, what)])


def eps_below_dtype(f: Facts, report: Report) -> Symptom | None:
    eps = f.get("op_input.eps_lost")
    smallest = f.get("op_input.eps_dtype_smallest")
    if eps is None or smallest is None:
        return None
    dtype = f.get("op_input.eps_dtype")
    name = DTYPE_SHORT.get(dtype, dtype)
    where = f" on line {f['op_input.eps_line']}" if f.get("op_input.eps_line") else ""
    what = (
        f"its input still held 0 although {f.get('op_input.eps_op') or 'an op'}{where} "
        f"added {fmt(eps)}: in {name} that eps is 0 (the smallest positive {name} value "
        f"is {fmt(smallest)})"
    )
    # above the division by zero (or log or root of 0) it explains: the guard was there
    return Symptom(id="eps-below-dtype", confidence=0.97, evidence=[_op_line(f, what)])


def number_beyond_dtype(f: Facts, report: Report) -> Symptom | None:
    number = f.get("op_input.number_beyond_dtype")
    limit = f.get("op_input.number_dtype_max")
    if number is None or limit is None:
        return None
    dtype = f.get("op_input.number_dtype")
    name = DTYPE_SHORT.get(dtype, dtype)
    largest = f"{limit:.0f}" if limit < 1e6 else fmt(limit)  # 65504, not 6.6e4
    what = (
        f"it was given the number {fmt(number)}, past the largest {name} value "
        f"({largest}): in {name} that number is already "
        f"{'-' if number < 0 else ''}inf"
    )
    return Symptom(id="number-beyond-dtype", confidence=0.95, evidence=[_op_line(f, what)])


# --- data -------------------------------------------------------------------------------------


def nonfinite_batch(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.phase") == "loss" and f.get("op_input.nonfinite"):
        # The model's outputs were finite (else the event would be in forward), so the
        # non-finite input of the loss op is what the batch brought: the targets.
        return Symptom(
            id="nonfinite-targets",
            confidence=0.8,
            evidence=[
                f"an input of the loss op {f.get('event.op') or ''} was already non-finite "
                "while the model's outputs were finite: the targets hold nan/inf".replace("  ", " ")
            ],
        )
    if f.get("event.phase") != "input":
        return None
    targets = f.get("event.input_role") == "targets"
    what = "targets" if targets else "input batch"
    count = f.get("event.sample_count")
    samples = ""
    if count and report.event and report.event.sample_indices:
        shown = ", ".join(str(i) for i in report.event.sample_indices[:5])
        samples = f" (dataset samples {shown}{', ...' if count > 5 else ''})"
    at = f" at step {f['event.step']}" if isinstance(f.get("event.step"), int) else ""
    return Symptom(
        id="nonfinite-targets" if targets else "nonfinite-input",
        confidence=0.95,
        evidence=[f"{_value(f)} in the {what}{at}{samples}, before the model saw it"],
    )


def all_targets_ignored(f: Facts, report: Report) -> Symptom | None:
    if not f.get("loss.is_cross_entropy") or not f.get("event.has_nan"):
        return None
    if f.get("op_input.nonfinite") or f.get("event.phase") == "input":
        return None
    ignored = f.get("targets.all_ignored")
    ignore_index = f.get("targets.ignore_index", -100)
    if ignored is True:
        confidence = 0.95
        what = f"every target equals ignore_index={ignore_index}: the mean is 0/0"
    elif ignored is None:
        confidence = 0.7
        what = (
            "cross-entropy of finite logits is nan only as a mean over no targets "
            f"(all equal to ignore_index={ignore_index})"
        )
    else:
        return None
    return Symptom(id="all-targets-ignored", confidence=confidence, evidence=[_op_line(f, what)])


def script_exception(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.kind") != "exception":
        return None
    kind = f.get("event.exception_type") or "an exception"
    message = str(f.get("event.message") or "").splitlines()[0:1]
    return Symptom(
        id="script-exception",
        confidence=1.0,
        evidence=[f"the script raised {kind}" + (f": {message[0]}" if message else "")],
    )


DETECTORS: list[Callable[[Facts, Report], Symptom | None]] = [
    nonfinite_batch,
    log_domain,
    division_by_zero,
    sqrt_at_zero,
    exp_overflow,
    pow_negative_base,
    number_beyond_dtype,
    eps_below_dtype,
    all_targets_ignored,
    fp16_overflow,
    adam_eps_underflow,
    loss_scale_collapse,
    clip_before_unscale,
    bad_initialization,
    lr_too_high,
    exploding_gradients,
    no_grad_clipping,
]


# An autograd anomaly error names the op, so these apply to it as well.
OP_DETECTORS = [log_domain, division_by_zero, sqrt_at_zero, exp_overflow, pow_negative_base]


def detect_symptoms(facts: Facts, report: Report) -> tuple[list[Symptom], list[str]]:
    """The symptoms of a report, most confident first, and warnings for detectors that failed.

    Symptoms describe a non-finite event (or an autograd anomaly error naming the op); a clean
    run has none, and an exception has only ``script-exception`` for user rules to read.
    """
    warnings: list[str] = []
    found: list[Symptom] = []
    detectors = DETECTORS
    if facts.get("event.kind") == "exception":
        detectors = [script_exception] + (OP_DETECTORS if facts.get("event.anomaly") else [])
    elif facts.get("event.kind") != "nonfinite":
        return detect_learning_symptoms(report), warnings
    for detector in detectors:
        try:
            symptom = detector(facts, report)
        except Exception as exc:  # odd evidence must not stop the diagnosis
            warnings.append(f"symptoms: {detector.__name__} skipped: {type(exc).__name__}: {exc}")
            continue
        if symptom is not None and symptom.confidence > 0:
            symptom.confidence = round(symptom.confidence, 3)
            symptom.title = symptom.title or TITLES.get(symptom.id)
            found.append(symptom)
    found.sort(key=lambda s: -s.confidence)
    return found, warnings
