"""Symptoms of the precision: values past a dtype's range, constants it cannot hold, the scaler."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.heuristics import DTYPE_MAX, DTYPE_SHORT, threshold
from diagnose.facts.symptoms.evidence import noisy_or, op_line, place, value_of
from diagnose.facts.symptoms.registry import symptom
from diagnose.formatting import num
from diagnose.report import Report, Symptom


@symptom("number-beyond-dtype", title="a constant the dtype cannot hold")
def number_beyond_dtype(f: Facts, report: Report) -> Symptom | None:
    number = f.get("op_input.number_beyond_dtype")
    limit = f.get("op_input.number_dtype_max")
    if number is None or limit is None:
        return None
    dtype = f.get("op_input.number_dtype")
    name = DTYPE_SHORT.get(dtype, dtype)
    largest = _limit(limit)
    what = (
        f"it was given the number {num(number)}, past the largest {name} value "
        f"({largest}): in {name} that number is already "
        f"{'-' if number < 0 else ''}inf"
    )
    return Symptom(id="number-beyond-dtype", confidence=0.95, evidence=[op_line(f, what)])


@symptom(
    "batch-cast-overflow",
    title="the batch overflowed when cast to a narrower dtype",
    related_tags=["fp16", "overflow", "mixed-precision", "dataloader"],
)
def batch_cast_overflow(f: Facts, report: Report) -> Symptom | None:
    dtype = f.get("batch_cast.dtype")
    if not dtype:
        return None
    name = DTYPE_SHORT.get(dtype, dtype)
    limit = DTYPE_MAX.get(dtype)
    largest = "" if limit is None else f", past the largest {name} value ({_limit(limit)})"
    into = "the loss" if f.get("event.phase") == "loss" else "the model"
    samples = ""
    if report.event and report.event.sample_indices:
        shown = ", ".join(str(i) for i in report.event.sample_indices[:5])
        more = ", ..." if len(report.event.sample_indices) > 5 else ""
        samples = f" (dataset samples {shown}{more})"
    source = f.get("batch_cast.source_dtype")
    what = (
        f"the DataLoader gave {into}'s {f.get('batch_cast.input')} in "
        f"{DTYPE_SHORT.get(source, source)} "
        f"with |x| up to {num(f.get('batch_cast.max_abs'))}{largest}; cast to {name} on its "
        f"way to {into}, those rows became inf{samples}: the data is finite, its dtype is not "
        "wide enough for it"
    )
    return Symptom(id="batch-cast-overflow", confidence=0.97, evidence=[what])


def _limit(limit: float) -> str:
    return f"{limit:.0f}" if limit < 1e6 else num(limit)  # 65504, not 6.6e4


@symptom("eps-below-dtype", title="an eps that is 0 in the dtype")
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
        f"added {num(eps)}: in {name} that eps is 0 (the smallest positive {name} value "
        f"is {num(smallest)})"
    )
    # above the division by zero (or log or root of 0) it explains: the guard was there
    return Symptom(id="eps-below-dtype", confidence=0.97, evidence=[op_line(f, what)])


@symptom(
    "fp16-overflow",
    title="fp16 overflow",
    related_tags=["fp16", "overflow", "mixed-precision", "loss-scaling"],
)
def fp16_overflow(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.phase") == "input" or f.get("batch_cast.dtype"):
        return None  # the batch brought the inf (batch-cast-overflow says how)
    accumulated = f.get("accumulation.compute_dtype") == "float16"
    fp16 = bool(f.get("precision.fp16")) or f.get("activation.dtype") == "float16" or accumulated
    if not fp16:
        return None
    evidence: list[str] = []
    parts: list[float] = []
    ratio = f.get("accumulation.ratio")
    if accumulated and ratio is not None and ratio >= 1:
        parts.append(0.95)
        evidence.append(_accumulation_evidence(f, report))
    ratio = f.get("dtype.max_abs_ratio") if f.get("activation.dtype") == "float16" else None
    if ratio is not None and ratio >= 0.1:
        parts.append(0.95 if ratio >= 0.9 else 0.85 if ratio >= 0.5 else 0.6)
        where = f" at {f['activation.module']}" if f.get("activation.module") else ""
        before = f.get("activation.steps_before_event")
        when = (
            f", {before} step{'s' if before != 1 else ''} before the {value_of(f)}"
            if isinstance(before, int)
            else ""
        )
        evidence.append(
            f"activation |x| max {num(f.get('activation.max_abs'))} in fp16{where}, "
            f"{ratio:.0%} of the range (65504){when}"
        )
    loss_ratio = f.get("loss.fp16_ratio")
    if loss_ratio is not None and loss_ratio >= 0.1:
        parts.append(0.85 if loss_ratio >= 0.5 else 0.5)
        evidence.append(
            f"loss reached {num(f.get('loss.max_abs'))}, {loss_ratio:.0%} of fp16's range"
        )
    # an op whose input was already non-finite passed the inf on: it was not born there
    if (
        f.get("event.dtype") == "float16"
        and f.get("event.has_inf")
        and not f.get("op_input.nonfinite")
    ):
        largest = f.get("op_input.max_abs")
        if f.get("event.op_family") == "reduce" and largest is not None and largest < 65504:
            parts.append(0.85)
            evidence.append(
                f"{f.get('event.op')} of fp16 values no larger than {num(largest)} passed "
                f"fp16's limit 65504 {place(f)}".rstrip()
            )
        else:
            parts.append(0.6)
            evidence.append(f"the first inf was born in float16 {place(f)}".rstrip())
    if not parts:
        return None
    confidence = noisy_or(*parts)
    if f.get("event.op_family") in ("exp", "log", "div", "sqrt", "pow"):
        confidence = min(confidence, 0.6)  # the op-level symptom is the more specific cause
    return Symptom(id="fp16-overflow", confidence=min(confidence, 0.97), evidence=evidence)


_FAR_FROM_LIMIT = 10.0  # inputs this many times below the dtype's largest value look safe


def _accumulation_evidence(f: Facts, report: Report) -> str:
    """What the reducing op summed, against fp16's range, and why the inputs did not show it."""
    event = report.event
    maxes = [v.max_abs for v in (event.op_input_values or [])[:2]] if event else []
    given = " and ".join(num(m) for m in maxes if m is not None)
    op = f.get("accumulation.op")
    terms = f.get("accumulation.terms")
    summed = f", {terms} products summed into each value" if terms else ""
    text = (
        f"{op} of float16 values (max |x| {given}){summed}: recomputed in float64 its result "
        f"reaches {num(f.get('accumulation.max_abs'))}, {num(f.get('accumulation.ratio'))}x "
        "fp16's largest value 65504"
    )
    headrooms = [s.headroom for s in (event.op_inputs if event else []) if s.headroom]
    if headrooms and min(headrooms) >= _FAR_FROM_LIMIT:
        text += (
            f"; the inputs' headroom ({num(min(headrooms))}x) does not show it, what the op "
            "accumulates does"
        )
    if f.get("accumulation.attention"):
        text += (
            "; these are attention scores (a softmax follows), scaled only after the product"
            if f.get("accumulation.scaled_after")
            else "; these are attention scores (a softmax follows), with no 1/sqrt(d) scale"
        )
    where = place(f)
    return f"{text}; {where}" if where else text


@symptom(
    "adam-eps-underflow",
    title="Adam's eps rounds to 0 in fp16",
    related_tags=["fp16", "mixed-precision", "numerical-stability"],
)
def adam_eps_underflow(f: Facts, report: Report) -> Symptom | None:
    if not f.get("adam.eps_underflows"):
        return None
    if f.get("event.step") == 0 and f.get("event.phase") != "optimizer":
        return None  # the optimizer has not run yet: its eps cannot be the cause
    confidence = 0.9 if f.get("adam.eps_known") else 0.75
    if f.get("event.phase") == "optimizer":
        confidence = noisy_or(confidence, 0.5)
    default = "" if f.get("adam.eps_known") else " (the optimizer's default)"
    return Symptom(
        id="adam-eps-underflow",
        confidence=min(confidence, 0.95),
        evidence=[
            f"{f.get('optimizer')} eps={num(f.get('adam.eps'))}{default} is 0 in fp16 "
            "(the smallest fp16 number is 6.0e-8): sqrt(v) + eps can be 0 and the update divides by it"
        ],
    )


@symptom(
    "loss-scale-collapse",
    title="loss scaler collapsing",
    related_tags=["loss-scaling", "grad-scaler", "overflow"],
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
            f"the GradScaler's scale fell from {num(f.get('loss_scale.first'))} to {num(last)} "
            f"({f.get('skipped_steps', 0)} skipped steps, {skipped} in a row at the end): "
            "the gradients are inf or nan at every scale"
        ],
    )


@symptom(
    "clip-before-unscale",
    title="gradients clipped before unscale_",
    related_tags=["grad-scaler", "gradient-clipping"],
)
def clip_before_unscale(f: Facts, report: Report) -> Symptom | None:
    if not f.get("scaler.clip_before_unscale"):
        return None
    scale = f.get("loss_scale.last")
    times = f" ~{num(scale)}x" if scale else ""
    return Symptom(
        id="clip-before-unscale",
        confidence=0.9,
        evidence=[
            f"gradients are clipped (max {num(f.get('grad_clip.max'))}) before scaler.unscale_: "
            f"the threshold acts on gradients scaled{times}, so it clips far too much or not at all"
        ],
    )
