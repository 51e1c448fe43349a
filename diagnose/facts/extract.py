"""Evidence (event, frames, history, config) -> a flat dict of named, JSON-safe facts.

Every fact is computed defensively: the tracer and the config capture may leave any field
missing, null, or of an unexpected type, and a fact that cannot be computed is simply absent
(rules test for it with ``exists`` / ``missing``). Facts never hold nan or inf: a non-finite
number is what the event is about, not a measurement to compare against.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable
from typing import Any

from diagnose.facts.crash import crash_facts
from diagnose.facts.heuristics import (
    DTYPE_MAX,
    DTYPE_SMALLEST,
    PRECISION_DTYPE,
    heuristics,
    is_backward_op,
    normalize_dtype,
    normalize_op,
    op_family,
    round_to_fp16,
    rounds_to_zero,
    threshold,
    typical_lr,
)
from diagnose.facts.mechanisms import mechanism_facts
from diagnose.facts.schedule import schedule_facts
from diagnose.learning.findings import (
    out_of_reach,
    saturated_from_start,
    saturated_only_output,
)
from diagnose.report import Config, Report

Facts = dict[str, Any]

# A detect_anomaly error names the backward function that produced the nan.
_ANOMALY = re.compile(r"Function '(\w+?Backward\d*)' returned nan values")


def get(obj: Any, key: str, default: Any = None) -> Any:
    """Field of a pydantic model (declared or extra) or of a dict; default when absent."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(key)
    return default if value is None else value


def num(value: Any) -> float | None:
    """A finite float, or None (for None, bools, strings, nan, inf)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _is_nonfinite_number(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _stats_nonfinite(stats: Any) -> bool:
    return (
        bool(get(stats, "nan"))
        or bool(get(stats, "inf"))
        or _is_nonfinite_number(get(stats, "abs_max"))
    )


def extract_facts(report: Report) -> tuple[Facts, list[str]]:
    """All facts about a report, and the warnings for the groups that could not be computed."""
    facts: Facts = {"status": report.status}
    warnings: list[str] = []
    groups: list[Callable[[Report, Facts], None]] = [
        _event_facts,
        _op_input_facts,
        _op_number_facts,
        _op_source_facts,
        _accumulation_facts,
        _config_facts,
        _history_facts,
        _activation_facts,
        _weight_facts,
        _target_facts,
        _learning_facts,
        mechanism_facts,
        crash_facts,
    ]
    for group in groups:
        try:
            group(report, facts)
        except Exception as exc:  # odd evidence must not stop the diagnosis
            warnings.append(
                f"facts: {group.__name__.strip('_')} skipped: {type(exc).__name__}: {exc}"
            )
    return {k: v for k, v in facts.items() if v is not None}, warnings


# --- the event --------------------------------------------------------------------------------


def _event_facts(report: Report, facts: Facts) -> None:
    event = report.event
    if event is None:
        return
    op = get(event, "op")
    message = get(event, "message") or ""
    anomaly = _ANOMALY.search(message) if isinstance(message, str) else None
    if not op and anomaly:
        op = anomaly.group(1)
    base = normalize_op(op)
    value = get(event, "value")
    value = value.lower() if isinstance(value, str) else None
    if value is None and isinstance(message, str):
        value = "+".join(v for v in ("nan", "inf") if v in message.lower()) or None
    phase = get(event, "phase")
    facts.update(
        {
            "event.kind": get(event, "kind"),
            "event.phase": phase,
            "event.step": get(event, "step") if isinstance(get(event, "step"), int) else None,
            "event.module": get(event, "module"),
            "event.module_type": get(event, "module_type"),
            "event.op": op,
            "event.op_base": base,
            "event.op_family": op_family(base),
            "event.in_backward": phase == "backward" or is_backward_op(op) or bool(anomaly),
            "event.dtype": normalize_dtype(get(event, "dtype")),
            "event.value": value,
            "event.op_value": _op_value(get(event, "op_value")),
            "event.has_nan": "nan" in value if value else None,
            "event.has_inf": "inf" in value if value else None,
            "event.message": message if isinstance(message, str) else None,
            "event.exception_type": get(event, "exception_type"),
            "event.anomaly": bool(anomaly),
            "event.location": _location(get(event, "location")),
        }
    )
    if phase == "input":
        words = " ".join(
            str(x)
            for x in (
                message,
                *(get(event, "details") or []),
                get(event, "tensor"),
                *(get(s, "name") for s in get(event, "op_inputs") or []),
            )
            if x
        ).lower()
        facts["event.input_role"] = "targets" if re.search(r"target|label", words) else "inputs"
        indices = get(event, "sample_indices")
        if isinstance(indices, list):
            facts["event.sample_count"] = len(indices)


def _accumulation_facts(report: Report, facts: Facts) -> None:
    """What a reducing producer accumulated (recomputed in float64), and the cross-check."""
    event = report.event
    check = get(event, "cross_check") if event is not None else None
    if check is not None:
        facts["cross_check.method"] = get(check, "method")
        facts["cross_check.agreed"] = get(check, "agreed")
    acc = get(event, "accumulation") if event is not None else None
    if acc is None:
        return
    largest, limit = num(get(acc, "max_abs")), num(get(acc, "dtype_max"))
    facts.update(
        {
            "accumulation.op": get(acc, "op"),
            "accumulation.compute_dtype": normalize_dtype(get(acc, "compute_dtype")),
            "accumulation.terms": get(acc, "terms"),
            "accumulation.bound": num(get(acc, "bound")),
            "accumulation.max_abs": largest,
            "accumulation.attention": bool(get(acc, "attention")),
            "accumulation.scaled_after": bool(get(acc, "scaled_after")),
        }
    )
    if largest is not None and limit:
        facts["accumulation.ratio"] = largest / limit


def _op_value(value: Any) -> str | None:
    return value.lower() if isinstance(value, str) and value.strip() else None


def _location(location: Any) -> str | None:
    file, line = get(location, "file"), get(location, "line")
    if not isinstance(file, str) or not file:
        return None
    return f"{file}:{line}" if isinstance(line, int) else file


def _signed(stats: Any, key: str) -> float | None:
    return num(get(stats, key))


def _op_input_facts(report: Report, facts: Facts) -> None:
    inputs = list(get(report.event, "op_inputs") or []) if report.event else []
    producer = next((f for f in report.frames or [] if get(f, "producer")), None)
    if producer is not None:  # the flagged module call: an input it got already non-finite
        given = list(get(producer, "inputs") or [])
        facts["producer_frame.input_nonfinite"] = any(_stats_nonfinite(s) for s in given)
    if not inputs:
        return
    mins = [num(get(s, "abs_min")) for s in inputs]
    maxs = [num(get(s, "abs_max")) for s in inputs]
    known_mins = [m for m in mins if m is not None]
    known_maxs = [m for m in maxs if m is not None]
    facts["op_input.count"] = len(inputs)
    facts["op_input.nonfinite"] = any(_stats_nonfinite(s) for s in inputs)
    if known_mins:
        facts["op_input.min_abs"] = min(known_mins)
    if known_maxs:
        facts["op_input.max_abs"] = max(known_maxs)
    true_mins = _true_minimums(report.event)
    zero_flags = _zero_flags(inputs, true_mins)
    facts["op_input.has_zero"] = _any_known(zero_flags)
    known_true = [m for m in true_mins if m is not None]
    if known_true:
        facts["op_input.min_abs"] = min(known_true)
    facts["op_input.has_negative"] = _any_known(_has_negative(s) for s in inputs)
    signed_mins = [m for m in (_signed(s, "min") for s in inputs) if m is not None]
    if signed_mins:
        facts["op_input.min"] = min(signed_mins)
    # The divisor of a binary division is its second input ("other"), when the tracer names it.
    divisor = next((s for s in inputs if get(s, "name") in ("other", "input[1]", "divisor")), None)
    if divisor is None and len(inputs) >= 2:
        divisor = inputs[1]
    if divisor is not None:
        index = inputs.index(divisor)
        facts["op_input.divisor_has_zero"] = zero_flags[index]
        facts["op_input.divisor_min_abs"] = num(get(divisor, "abs_min"))


def op_dtype(event: Any) -> str | None:
    """The float dtype the producing op computed in: the event's, else its inputs'."""
    dtypes = [get(event, "dtype")] + [get(s, "dtype") for s in get(event, "op_inputs") or []]
    return next((d for d in map(normalize_dtype, dtypes) if d in DTYPE_MAX), None)


def _op_number_facts(report: Report, facts: Facts) -> None:
    """A plain number given to the producing op that its dtype cannot hold (``x * 1e39`` in
    float32, ``x * 1e5`` in float16): in that dtype it is inf before the op even runs."""
    numbers = get(report.event, "op_numbers")
    dtype = op_dtype(report.event)
    if not numbers or dtype is None:
        return
    limit = DTYPE_MAX[dtype]
    plain = _plain_floats(numbers)
    # An infinity given on purpose (a float("-inf") mask) is not a finite number the dtype
    # rounds to inf: every float dtype holds it.
    facts["op_input.infinite_number"] = any(math.isinf(v) for v in plain) or None
    beyond = [v for v in plain if math.isfinite(v) and abs(v) > limit]
    if beyond:
        facts["op_input.number_beyond_dtype"] = max(beyond, key=abs)
        facts["op_input.number_dtype"] = dtype
        facts["op_input.number_dtype_max"] = limit


def _op_source_facts(report: Report, facts: Facts) -> None:
    """An eps that vanished: an input of the producing op holds 0 although the op that made it
    added a small positive number (``std + 1e-8``), because in the op's dtype that number is 0
    (1e-8 in float16, whose smallest positive value is 6e-8)."""
    sources = get(report.event, "op_input_sources")
    dtype = op_dtype(report.event)
    if not sources or dtype is None:
        return
    zero_flags = _zero_flags(get(report.event, "op_inputs") or [], _true_minimums(report.event))
    for source in sources:
        index = get(source, "input")
        if not isinstance(index, int) or not 0 <= index < len(zero_flags):
            continue
        if not zero_flags[index]:
            continue
        lost = [v for v in _plain_floats(get(source, "numbers") or []) if rounds_to_zero(v, dtype)]
        if lost:
            facts["op_input.eps_lost"] = max(lost)
            facts["op_input.eps_op"] = get(source, "op")
            facts["op_input.eps_dtype"] = dtype
            facts["op_input.eps_dtype_smallest"] = DTYPE_SMALLEST[dtype]
            line = get(get(source, "location"), "line")
            facts["op_input.eps_line"] = line if isinstance(line, int) else None
            return


def _plain_floats(values: Iterable[Any]) -> list[float]:
    """The numbers among ``values`` as floats (a bool is no number here)."""
    return [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]


def _zero_flags(inputs: list[Any], true_mins: list[float | None]) -> list[bool | None]:
    """For each op input, whether it holds 0 (None: unknown)."""
    return [
        _zero_flag(s, true_mins[i] if i < len(true_mins) else None) for i, s in enumerate(inputs)
    ]


def _true_minimums(event: Any) -> list[float | None]:
    """The true smallest |x| of each op input (0 when it holds a zero), as the tracer measured
    it; TensorStats.abs_min leaves zeros out. (An older report's are read from its detail line
    when it is loaded.)"""
    return [num(get(v, "min_abs")) for v in get(event, "op_input_values") or []]


def _zero_flag(stats: Any, true_min: float | None) -> bool | None:
    """Whether an op input holds 0: its zero count when recorded, else its true smallest
    |x|, else what its bounds say."""
    zeros = get(stats, "zeros")
    if isinstance(zeros, int) and not isinstance(zeros, bool):
        return zeros > 0
    if true_min is not None:
        return true_min == 0.0
    return _has_zero(stats)


def _has_zero(stats: Any) -> bool | None:
    """Whether a tensor holds 0: from a zero count, else signed bounds that exclude 0, else an
    all-zero tensor (abs_min is the smallest *non-zero* |x|, so abs_min > 0 proves nothing)."""
    zeros = get(stats, "zeros")
    if isinstance(zeros, int) and not isinstance(zeros, bool):
        return zeros > 0
    lo, hi = _signed(stats, "min"), _signed(stats, "max")
    if lo is not None and hi is not None and (lo > 0.0 or hi < 0.0):
        return False
    abs_min = num(get(stats, "abs_min"))
    if abs_min == 0.0 or (lo == 0.0 or hi == 0.0):
        return True
    return None


def _has_negative(stats: Any) -> bool | None:
    negatives = get(stats, "negatives")
    if isinstance(negatives, int) and not isinstance(negatives, bool):
        return negatives > 0
    lo = _signed(stats, "min")
    return None if lo is None else lo < 0.0


def _any_known(values: Iterable[bool | None]) -> bool | None:
    """True if any is True; False if all are known and False; None if unknown."""
    seen = list(values)
    if any(v is True for v in seen):
        return True
    if seen and all(v is False for v in seen):
        return False
    return None


# --- the training config ----------------------------------------------------------------------


def _config_facts(report: Report, facts: Facts) -> None:
    config = report.config
    precision = config.precision or "unknown"
    facts["precision"] = precision
    event_dtype = facts.get("event.dtype")
    facts["precision.fp16"] = precision in ("fp16", "fp16-autocast") or event_dtype == "float16"
    facts["precision.low"] = (
        facts["precision.fp16"] or precision.startswith("bf16") or (event_dtype == "bfloat16")
    )
    optimizer = config.optimizer
    key = optimizer.rsplit(".", 1)[-1].lower() if optimizer else None
    facts["optimizer"] = optimizer
    facts["optimizer.key"] = key
    facts["optimizer.adam_family"] = key in heuristics().get("adam_family", []) if key else None
    lr = _lr(report)
    facts["lr"] = lr
    typical, source = typical_lr(key)
    if typical is not None:
        facts["lr.typical"] = typical
        facts["lr.typical_source"] = source
        if lr is not None and lr > 0:
            facts["lr_vs_typical"] = lr / typical
    facts["lr_scheduler"] = _scheduler_name(config)
    schedule_facts(report, facts)
    _clip_facts(config, facts)
    facts["config.captured"] = bool(optimizer) or lr is not None
    if facts["optimizer.adam_family"]:
        _adam_facts(config, key, precision, facts)


def _lr(report: Report) -> float | None:
    """The lr the user set: the optimizer's when built, else the config's, else the first param
    group's, else the first step's (not a scheduled value near the event: a warmup or a decay
    would hide what was chosen), else the lr flag of an update written by hand."""
    lr = num(report.config.lr_initial)
    lr = num(report.config.lr) if lr is None or lr <= 0 else lr
    groups = report.config.param_groups or []
    if lr is None:
        lr = next((num(g.lr) for g in groups if num(g.lr) is not None), None)
    if lr is None:
        lr = next((num(r.lr) for r in report.history if num(r.lr) is not None), None)
    if lr is None:
        from diagnose.patches.lr_size import flag_lr

        lr = flag_lr(report)
    return lr


def _scheduler_name(config: Config) -> str | None:
    scheduler = config.lr_scheduler
    if not scheduler:
        return None
    if isinstance(scheduler, str):
        return scheduler
    extra = scheduler.model_extra or {}
    return str(extra.get("name") or scheduler.name or "yes")


def _framework_scaler(config: Config) -> bool:
    """A framework was set to scale the loss: TrainingArguments(fp16=True) and Lightning's
    "16-mixed" precision build a GradScaler of their own."""
    hf = config.transformers or {}
    pl = config.lightning or {}
    return hf.get("fp16") is True or str(pl.get("precision")) in ("16-mixed", "16")


def _framework_clip(config: Config) -> bool:
    """A framework was set to clip: TrainingArguments.max_grad_norm, Trainer gradient_clip_val."""
    settings = (
        (config.transformers or {}).get("max_grad_norm"),
        (config.lightning or {}).get("gradient_clip_val"),
    )
    return any(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in settings)


def _clip_facts(config: Config, facts: Facts) -> None:
    clip = config.grad_clip
    facts["grad_clip.enabled"] = clip is not None or bool(config.grad_clips)
    facts["grad_clip.configured"] = _framework_clip(config)
    if clip is not None:
        facts["grad_clip.kind"] = clip.kind
        facts["grad_clip.max"] = num(clip.max)
    facts["grad_scaler"] = config.grad_scaler
    facts["grad_scaler.configured"] = _framework_scaler(config)
    # the capture records it with the clipping; a config file may give it on its own
    after = clip.clip_after_unscale if clip is not None else None
    after = config.clip_after_unscale if after is None else after
    if config.grad_scaler and clip is not None and isinstance(after, bool):
        facts["scaler.clip_before_unscale"] = not after


def _adam_facts(config: Config, key: str | None, precision: str, facts: Facts) -> None:
    groups = config.param_groups or []
    eps = next((num(g.eps) for g in groups if num(g.eps) is not None), None)
    facts["adam.eps_known"] = eps is not None
    if eps is None:
        eps = num(heuristics().get("default_eps", {}).get(key))
    if eps is not None:
        facts["adam.eps"] = eps
        facts["adam.eps_in_fp16"] = round_to_fp16(eps)
        # Adam's eps is added in the dtype of the parameters: pure fp16 weights only.
        facts["adam.eps_underflows"] = precision == "fp16" and round_to_fp16(eps) == 0.0


# --- the step history -------------------------------------------------------------------------


def _window(values: list[float | None]) -> list[float]:
    finite = [v for v in values if v is not None]
    return finite[-int(threshold("trend_window", 6)) :]


def signed_growth(first: float, last: float) -> float | None:
    """How many times ``first`` the value rose to, judged on the signed values: last / first
    for a positive start, and 1 + (last - first) / |first| in general, so a loss that falls
    below zero and on (a linear objective, a negative log-likelihood, a Wasserstein critic, an
    ELBO term) shrinks, never grows, however large its magnitude gets."""
    if first == 0.0:
        return None
    return 1.0 + (last - first) / abs(first)


def _growth(values: list[float]) -> float | None:
    if len(values) < 2:
        return None
    return signed_growth(values[0], values[-1])


def _rising_steps(values: list[float]) -> int:
    """Steps in a row, up to the last, where the value rose by rise_factor - 1 of its size or
    more (noise-sized wiggles do not count as a trend; a value falling below zero does not
    rise)."""
    factor = threshold("rise_factor", 1.1)
    count = 0
    for before, after in zip(reversed(values[:-1]), reversed(values[1:]), strict=True):
        if after > before and after - before >= (factor - 1.0) * abs(before):
            count += 1
        else:
            break
    return count


def _series_facts(facts: Facts, values: list[float], prefix: str, trend: str) -> None:
    """First and last value, growth over the window (under the public name ``trend``), steps
    rising in a row and the last step's jump of one per-step series (loss, gradient norm)."""
    facts[f"{prefix}.first"] = values[0]
    facts[f"{prefix}.last"] = values[-1]
    facts[trend] = _growth(values)
    facts[f"{prefix}.rising_steps"] = _rising_steps(values)
    facts[f"{prefix}.last_jump"] = _growth(values[-2:])
    facts[f"{prefix}.points"] = len(values)


def _summary(record: Any) -> Any:
    """The summary part of a history row that stands for many steps (None for one step)."""
    return get(record, "summary")


def _history_facts(report: Report, facts: Facts) -> None:
    history = [r for r in report.history if r is not None]
    facts["history.steps"] = report.steps_recorded
    if not history:
        return
    _loss_history(history, facts)
    _grad_history(history, facts)
    _scale_history(history, facts)


def _loss_history(history: list[Any], facts: Facts) -> None:
    """The loss over the last steps, its largest value and its growth over the whole run."""
    losses = _window([num(r.loss) for r in history])
    if losses:
        _series_facts(facts, losses, "loss", trend="loss_trend")
    all_losses = [abs(v) for v in (num(r.loss) for r in history) if v is not None]
    # A summary row's extremes count for the largest loss; its mean stands in the series.
    extremes = [
        abs(v)
        for r in history
        if _summary(r) is not None
        for v in (num(get(_summary(r), "loss_min")), num(get(_summary(r), "loss_max")))
        if v is not None
    ]
    if all_losses or extremes:
        facts["loss.max_abs"] = max(all_losses + extremes)
    signed = [v for v in (num(r.loss) for r in history) if v is not None]
    if len(signed) >= 6:  # the whole run: a divergence that never turned non-finite
        start, end = min(signed[:3]), statistics.median(signed[-3:])
        growth = signed_growth(start, end)
        if growth is not None:
            facts["run.loss_start"], facts["run.loss_end"] = start, end
            facts["run.loss_growth"] = growth


def _grad_history(history: list[Any], facts: Facts) -> None:
    """The gradient norm, the weight norm and the update ratio over the last steps."""
    norms = _window([num(r.grad_norm) for r in history])
    if norms:
        _series_facts(facts, norms, "grad_norm", trend="grad_norm_growth")
        facts["grad_norm.max"] = max(norms)
    whole = [
        v
        for r in history
        for v in (num(r.grad_norm), num(get(_summary(r), "grad_norm_max")))
        if v is not None and math.isfinite(v)
    ]
    if whole:
        facts["grad_norm.run_max"] = max(whole)
    facts["grad_norm.nonfinite"] = any(
        _is_nonfinite_number(r.grad_norm) or _is_nonfinite_number(get(_summary(r), "grad_norm_max"))
        for r in history
    )
    weight_norms = _window([num(get(r, "weight_norm")) for r in history])
    if len(weight_norms) >= 2:
        facts["weight_norm_growth"] = _growth(weight_norms)
    ratios = [num(get(r, "update_ratio")) for r in history]
    ratios = [r for r in ratios if r is not None]
    if ratios:
        facts["update_ratio.max"] = max(ratios[-int(threshold("trend_window", 6)) :])


def _scale_history(history: list[Any], facts: Facts) -> None:
    """The loss scale's course and the steps a GradScaler skipped."""
    scales = [num(r.loss_scale) for r in history]
    known = [s for s in scales if s is not None]
    if known:
        largest = [num(get(_summary(r), "loss_scale_max")) for r in history]
        facts["loss_scale.first"] = known[0]
        facts["loss_scale.last"] = known[-1]
        facts["loss_scale.min"] = min(known)
        if known[-1] > 0:
            facts["loss_scale.drop"] = (
                max(known + [s for s in largest if s is not None]) / known[-1]
            )
    skipped = [bool(r.skipped) for r in history]
    facts["skipped_steps"] = sum(
        int(get(_summary(r), "skipped_steps") or 0) if _summary(r) is not None else int(flag)
        for r, flag in zip(history, skipped, strict=True)
    )
    consecutive = 0
    for flag in reversed(skipped):
        if not flag:
            break
        consecutive += 1
    facts["skipped.consecutive_at_end"] = consecutive


# --- activations ------------------------------------------------------------------------------


# The largest activation seen so far: (|x| / its dtype's limit, |x|, dtype, module, step).
_Peak = tuple[float, float, str, Any, Any]


def _activation_facts(report: Report, facts: Facts) -> None:
    """The largest finite |activation| before the event, against its dtype's limit."""
    precision_dtype = PRECISION_DTYPE.get(str(facts.get("precision")))
    event_step = facts.get("event.step")
    best, near = _frame_peak(report.frames, precision_dtype)
    best, near_steps = _history_peak(report.history, precision_dtype, best)
    facts["activation.near_limit_count"] = near + near_steps
    if best is not None:
        ratio, value, dtype, module, step = best
        facts["dtype.max_abs_ratio"] = ratio
        facts["activation.max_abs"] = value
        facts["activation.dtype"] = dtype
        facts["activation.module"] = module
        if isinstance(step, int) and isinstance(event_step, int):
            facts["activation.steps_before_event"] = max(event_step - step, 0)
    loss = facts.get("loss.max_abs")
    if loss is not None and facts.get("precision.fp16"):
        facts["loss.fp16_ratio"] = loss / DTYPE_MAX["float16"]


def _frame_peak(frames: list[Any], precision_dtype: str | None) -> tuple[_Peak | None, int]:
    """The largest |x| the frames before the producer's show, and how many came near their
    dtype's limit."""
    best: _Peak | None = None
    near = 0
    for frame in frames:
        if frame is None or frame.producer:
            continue
        for stats in (*frame.outputs, *frame.inputs):
            value = num(get(stats, "abs_max"))
            dtype = normalize_dtype(get(stats, "dtype")) or precision_dtype
            if value is None or dtype not in DTYPE_MAX:
                continue
            ratio = value / DTYPE_MAX[dtype]
            if get(stats, "near_limit") or ratio >= threshold("near_limit_ratio", 0.5):
                near += 1
            if best is None or ratio > best[0]:
                best = (ratio, value, dtype, frame.module, frame.step)
    return best, near


def _history_peak(
    history: list[Any], precision_dtype: str | None, best: _Peak | None
) -> tuple[_Peak | None, int]:
    """The per-step largest activations against ``best``, and the steps near the limit."""
    near = 0
    for record in history:
        measured = [
            v for v in (num(record.max_activation), num(record.max_output)) if v is not None
        ]
        value = max(measured) if measured else None
        if value is None or precision_dtype is None:
            continue
        ratio = value / DTYPE_MAX[precision_dtype]
        if record.near_limit:
            summary = _summary(record)
            near += int(get(summary, "near_limit_steps") or 1) if summary is not None else 1
        if best is None or ratio > best[0]:
            best = (ratio, value, precision_dtype, None, record.step)
    return best, near


# --- weights ----------------------------------------------------------------------------------


def _weight_facts(report: Report, facts: Facts) -> None:
    largest: float | None = None
    nonfinite = False
    for frame in report.frames:
        if frame is None:
            continue
        for stats in frame.weights:
            if _stats_nonfinite(stats):
                nonfinite = True
            value = num(get(stats, "abs_max"))
            if value is not None and (largest is None or value > largest):
                largest = value
    facts["weights.nonfinite"] = nonfinite
    facts["weights.max_abs"] = largest
    step = facts.get("event.step")
    # Before the first update: step 0 and not in the optimizer phase (that is the update).
    before_update = (step == 0) or (step is None and not report.history)
    facts["weights.at_start"] = before_update and facts.get("event.phase") != "optimizer"


# --- targets of a classification loss ---------------------------------------------------------


def _target_facts(report: Report, facts: Facts) -> None:
    module_type = str(facts.get("event.module_type") or "").lower()
    is_ce = facts.get("event.op_family") == "cross_entropy" or module_type in (
        "crossentropyloss",
        "nllloss",
    )
    facts["loss.is_cross_entropy"] = is_ce
    if not is_ce or report.event is None:
        return
    loss_fn = report.config.loss_fn or {}
    ignore = loss_fn.get("ignore_index")
    ignore = get(report.event, "ignore_index", ignore)
    ignore = (
        int(ignore) if isinstance(ignore, int | float) and not isinstance(ignore, bool) else -100
    )
    facts["targets.ignore_index"] = ignore
    explicit = get(report.event, "all_targets_ignored")
    if isinstance(explicit, bool):
        facts["targets.all_ignored"] = explicit
        return
    total, ignored = get(report.event, "targets_total"), get(report.event, "targets_ignored")
    if isinstance(total, int) and isinstance(ignored, int) and total > 0:
        # Counted by the tracer on the loss op's own target tensor.
        facts["targets.count"] = total
        facts["targets.ignored_count"] = ignored
        facts["targets.all_ignored"] = ignored == total
        return
    inputs = list(get(report.event, "op_inputs") or [])
    target = next(
        (s for s in inputs if re.search(r"target|label", str(get(s, "name") or ""), re.I)),
        inputs[1] if len(inputs) >= 2 else None,
    )
    if target is None:
        return
    lo, hi = _signed(target, "min"), _signed(target, "max")
    if lo is not None and hi is not None:
        facts["targets.all_ignored"] = lo == hi == ignore
        return
    amin, amax = num(get(target, "abs_min")), num(get(target, "abs_max"))
    if amin is not None and amax is not None:
        # Without signs, every |target| equal to |ignore_index| is the best evidence there is.
        facts["targets.all_ignored"] = amin == amax == abs(ignore)


# --- what the learning watch saw ----------------------------------------------------------


def _learning_facts(report: Report, facts: Facts) -> None:
    """The learning evidence the verdicts on a finite run rest on, and the facts that rule a
    verdict out: the most lr the run used, whether anything the optimizers hold can learn, what
    the output of a regression loss can reach against its targets."""
    lrs = [v for v in (num(row.lr) for row in report.history) if v is not None]
    lr = facts.get("lr")
    most = max(lrs) if lrs else lr
    if isinstance(most, int | float):
        facts["lr.run_max"] = most
        typical = facts.get("lr.typical")
        if isinstance(typical, int | float) and typical > 0:
            facts["lr.run_max_vs_typical"] = most / typical
    learning = report.learning
    if learning is None:
        return
    if learning.grads_checked:
        facts["learning.trainable_elements"] = learning.optimized_elements
    facts["learning.output_out_of_reach"] = out_of_reach(learning) is not None
    facts["learning.saturated_only_output"] = saturated_only_output(learning)
    facts["learning.saturated_from_start"] = saturated_from_start(learning)
    facts["learning.weight_change"] = learning.weight_change
