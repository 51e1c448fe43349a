"""From a scanned record to the report's Event: which kind of event, and its message.

Pure: each function takes records whose values were read back, what was found about them
(the op a replay named, the weights' statistics, the module names) and returns the Event
whose message is written once, from all of it. Nothing here re-runs the model or touches the
tracer; ``investigate`` gathers what these need.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from diagnose.formatting import num
from diagnose.report import BatchCast, Event, TensorStats
from diagnose.tracer.data import CastOverflow
from diagnose.tracer.ops import OpFinding
from diagnose.tracer.stats import dtype_name, nonfinite_kind
from diagnose.tracer.window import Rec

Namer = Callable[[Any], "str | None"]
_HEAD = "first non-finite: step"


@dataclass
class Explained:
    """An event, the module call that produced it (for the frames), the op that did."""

    event: Event
    producer: Rec | None = None
    finding: OpFinding | None = None


@dataclass
class BackwardOp:
    """The op whose gradient was born non-finite: among the ops recorded outside modules
    (``module`` None), else inside a module call (``module``: its name and type)."""

    finding: OpFinding
    module: tuple[str | None, str] | None = None


def _subject(name: str | None, module_type: str, dtype: str | None) -> str:
    return f"`{name}` ({module_type}, {dtype})"


def _op_subject(op: str, dtype: str | None) -> str:
    return f"op `{op}` ({dtype})"


def _event(
    message: str, finding: OpFinding | None, details: list[str], note: str | None, **fields: Any
) -> Event:
    """The Event, with what the op finding adds (its fields, its detail line, and at the end
    of the message its op and line outside the loss phase); else the note, if any."""
    if finding is None:
        return Event(
            kind="nonfinite",
            message=message,
            details=[*details, *([note] if note else [])],
            **fields,
        )
    loc = finding.location
    if fields.get("phase") != "loss" and loc is not None:
        born = "born in the backward of op" if finding.backward else "op"
        message += f"; {born} `{finding.op}` at {loc.file}:{loc.line}: {finding.detail}"
    if finding.targets is not None:
        fields["ignore_index"], fields["targets_total"], fields["targets_ignored"] = finding.targets
    mechanism = _mechanism_lines(finding)
    if finding.ctc is not None and finding.ctc[1]:
        fields["ctc_infeasible"], fields["ctc_infeasible_count"] = finding.ctc
    if finding.masked is not None:
        fields["masked_rows"] = finding.masked
    return Event(
        kind="nonfinite",
        message=message,
        details=[*details, finding.detail, *mechanism],
        op=finding.op,
        op_value=None if finding.backward else finding.value,
        location=loc,
        op_inputs=finding.inputs,
        op_input_values=finding.values,
        op_numbers=finding.numbers or None,
        op_input_sources=finding.sources or None,
        call_chain=finding.call_chain,
        cross_check=finding.cross_check,
        accumulation=finding.accumulation,
        **fields,
    )


def _mechanism_lines(finding: OpFinding) -> list[str]:
    """What made the nan when the producing op is only half the story: a CTC sample without
    an alignment, or a softmax row the mask left -inf everywhere (0/0), not the -inf itself."""
    lines = []
    if finding.ctc is not None and finding.ctc[1]:
        samples, count = finding.ctc
        first = samples[0]
        lines.append(
            f"{count} sample{'s' if count != 1 else ''} of the batch cannot be aligned: "
            f"sample {first.sample} has {first.input_length} input frames for a target of "
            f"{first.target_length} symbols that needs {first.needed}"
        )
    masked = finding.masked
    if masked is not None:
        where = f" at {masked.location.file}:{masked.location.line}" if masked.location else ""
        lines.append(
            f"{masked.op}{where} received {masked.count} of {masked.total} rows that are -inf "
            f"everywhere (first at index {masked.rows[0]}): a fully masked row's softmax is "
            "0/0 = nan"
        )
    return lines


def out_summary(rec: Rec) -> str:
    """What a call's first non-finite output holds: "output has nan", "output |x| max = inf"."""
    for (name, _, _, _), (lo, hi) in zip(rec.outs, rec.values or (), strict=False):
        kind = nonfinite_kind(lo, hi) if not _finite(lo, hi) else None
        if kind is not None:
            label = "output" if name == "output" else name
            return f"{label} has nan" if kind == "nan" else f"{label} |x| max = inf"
    return "output non-finite"


def value_of(rec: Rec) -> str | None:
    """The kind of the first non-finite value of ``rec``."""
    return next(
        (nonfinite_kind(lo, hi) for lo, hi in rec.values or () if not _finite(lo, hi)), None
    )


def _finite(lo: float, hi: float) -> bool:
    return math.isfinite(lo) and math.isfinite(hi)


def _dtype(rec: Rec) -> str | None:
    return next((dtype_name(d) for _, d, *_ in rec.outs), None)


def input_event(
    root: Rec,
    name: str | None,
    indices: list[int],
    cast: CastOverflow | None = None,
    cast_input: str = "input",
) -> Event:
    """The batch fed to the model already held the non-finite value (``cast``: a cast of the
    loader's finite batch to a narrower dtype made it)."""
    bad = [
        (n, d)
        for (n, d, _, _), (lo, hi) in zip(root.ins, root.invalues, strict=True)
        if not _finite(lo, hi)
    ]
    what = bad[0][0] if bad else "input"
    dtype = dtype_name(bad[0][1]) if bad else None
    mtype = type(root.module).__name__
    msg = f"{_HEAD} {root.step}, input, {_subject(name, mtype, dtype)}: {what} already "
    if cast is not None:
        msg += f"non-finite in the batch fed to the model: {_cast_words(cast)}"
    else:
        msg += "non-finite in the batch fed to the model"
    if indices:
        msg += f" (dataset indices {indices[:8]})"
    return Event(
        kind="nonfinite",
        phase="input",
        step=root.step,
        module=name,
        module_type=mtype,
        dtype=dtype,
        message=msg,
        sample_indices=indices or None,
        batch_cast=batch_cast(cast_input, cast),
    )


def batch_cast(name: str, cast: CastOverflow | None) -> BatchCast | None:
    if cast is None:
        return None
    return BatchCast(
        input=name,
        source_dtype=cast.source_dtype,
        dtype=cast.dtype,
        max_abs=cast.max_abs,
        rows=cast.rows,
    )


def _cast_words(cast: CastOverflow) -> str:
    return (
        f"the loader's {cast.source_dtype} rows (|x| up to {num(cast.max_abs)}) were finite "
        f"and became inf when cast to {cast.dtype}"
    )


def forward_producer(rec: Rec, calls: dict[int, Rec]) -> Rec:
    """The call that made ``rec``'s non-finite output: ``rec`` itself from finite inputs,
    else (made between child modules, in a parent's own code) the innermost parent whose
    inputs were still finite."""
    producer = rec
    while producer.inputs_bad() and producer.parent in calls:
        producer = calls[producer.parent]
    return producer


def forward_event(
    rec: Rec,
    producer: Rec,
    name: Namer,
    weight_max: float | None,
    finding: OpFinding | None,
    note: str | None = None,
) -> Event:
    """A module's forward made the value (``producer`` is ``rec`` or a parent of it)."""
    module = producer.module
    mtype = type(module).__name__
    phase = "loss" if isinstance(module, torch.nn.modules.loss._Loss) else "forward"
    dtype = _dtype(rec)
    if producer is rec:
        what = f"{out_summary(rec)} from finite input"
    else:  # made in the parent's own code, first seen coming out of a submodule
        what = (
            f"made non-finite in its own forward from finite inputs; "
            f"`{name(rec.module)}` ({type(rec.module).__name__}) received it "
            f"and its {out_summary(rec)}"
        )
    msg = f"{_HEAD} {rec.step}, {phase}, {_subject(name(module), mtype, dtype)}: {what}"
    if weight_max is not None:
        msg += f", weight |x| max {num(weight_max)}"
    return _event(
        msg,
        finding,
        [],
        note,
        phase=phase,
        step=rec.step,
        module=name(module),
        module_type=mtype,
        dtype=dtype,
        value=value_of(rec),
    )


def weight_event(
    rec: Rec,
    producer: Rec,
    name: Namer,
    weight: TensorStats,
    optimizer: Any,
    states: list[TensorStats],
) -> Event:
    """A weight the previous optimizer step made non-finite (from finite gradients)."""
    module = producer.module
    mtype = type(module).__name__
    step = max(rec.step - 1, 0)
    label = f"{name(module)}.{weight.name}"
    value = "nan" if weight.nan else "inf"
    by = f"{type(optimizer).__name__}.step()" if optimizer is not None else "the optimizer.step()"
    msg = (
        f"{_HEAD} {step}, optimizer, {_subject(name(module), mtype, weight.dtype)}: weight "
        f"`{label}` is {value} after {by} from finite gradients"
    )
    details = [f"parameter {label}"]
    details += [f"optimizer state {s.name}: |x| max {num(s.abs_max)}" for s in states]
    return Event(
        kind="nonfinite",
        phase="optimizer",
        step=step,
        module=name(module),
        module_type=mtype,
        dtype=weight.dtype,
        message=msg,
        value=value,
        details=details,
    )


def loss_event(
    rec: Rec,
    finding: OpFinding | None,
    note: str | None = None,
    cast: tuple[str, CastOverflow] | None = None,
) -> Event:
    """The loss went non-finite outside any module (a hand-written loss). ``cast``: an input
    of the loss that the loader gave finite and a cast to a narrower dtype made inf."""
    dtype = dtype_name(rec.outs[0][1])
    lo, hi = (rec.values or [(0.0, 0.0)])[0]
    if cast is not None:
        name, rows = cast
        msg = f"{_HEAD} {rec.step}, loss: its {name} was already non-finite: {_cast_words(rows)}"
    elif finding is not None:
        loc = finding.location
        where = f" at {loc.file}:{loc.line}" if loc else ""
        msg = f"{_HEAD} {rec.step}, loss, op `{finding.op}`{where}: {finding.detail}"
    else:
        msg = (
            f"{_HEAD} {rec.step}, loss ({dtype}) is {nonfinite_kind(lo, hi)} from finite "
            "model outputs"
        )
    return _event(
        msg,
        finding,
        [],
        note,
        phase="loss",
        step=rec.step,
        dtype=dtype,
        value=nonfinite_kind(lo, hi),
        batch_cast=batch_cast(cast[0], cast[1]) if cast is not None else None,
        sample_indices=(cast[1].indices or None) if cast is not None else None,
    )


def grad_maker(rec: Rec, recs: list[Rec]) -> Any:
    """The module whose backward made the gradient ``rec`` records: the one backward visited
    before (modules that own parameters are not hooked, so for the first one, the next call
    after it that owns parameters: the Linear a ReLU fed)."""
    grads = [r for r in recs if r.kind == "grad"]
    i = grads.index(rec)
    if i > 0:
        return grads[i - 1].module
    calls = [r for r in recs if r.kind == "call"]
    mine = next((r for r in calls if r.module is rec.module and r.call == rec.call), None)
    if mine is None:
        return rec.module
    later = [r for r in calls if r.parent == mine.parent and r.call > mine.call]
    nxt = min(later, key=lambda r: r.call, default=None)
    return nxt.module if nxt is not None and nxt.module._parameters else rec.module


def grad_event(
    rec: Rec, maker: Any, name: Namer, found: BackwardOp | None, note: str | None = None
) -> Event:
    """A module's backward sent a non-finite gradient into another module's output."""
    lo, hi = (rec.values or [(0.0, 0.0)])[0]
    dtype = dtype_name(rec.outs[0][1])
    kind = nonfinite_kind(lo, hi)
    module, mtype = name(maker), type(maker).__name__
    if found is not None and found.module is None:  # born in code outside modules
        subject, tail, module, mtype = _op_subject(found.finding.op, dtype), "", None, None
    else:
        if found is not None and found.module is not None:
            # the op's own module: the module backward visited before is only a guess (with
            # residual branches, the gradient may have come down another one)
            module, mtype = found.module
        subject, tail = _subject(module, mtype, dtype), " from finite incoming gradients"
    msg = (
        f"{_HEAD} {rec.step}, backward, {subject}: gradient {kind} w.r.t. the output of "
        f"`{name(rec.module)}` ({type(rec.module).__name__}){tail}"
    )
    return _event(
        msg,
        found.finding if found is not None else None,
        [],
        note,
        phase="backward",
        step=rec.step,
        module=module,
        module_type=mtype,
        dtype=dtype,
        value=kind,
    )


def bad_parameter(rec: Rec, owners: dict[int, Any], last_call: dict[int, int]) -> int:
    """Which of a norm record's non-finite entries the event is about: for gradients, the
    module whose forward ran last (backward runs the forward in reverse, so that is where it
    met the value first); else the first."""
    bad = [i for i, (lo, hi) in enumerate(rec.values or ()) if not _finite(lo, hi)]
    if rec.kind != "pgrad":
        return bad[0]

    def ran_at(i: int) -> int:
        module = owners.get(id(rec.target[i]), (None, None, None))[2]
        return last_call.get(id(module), -1)

    return max(bad, key=ran_at)


def param_event(
    rec: Rec,
    index: int,
    owner: tuple[str | None, str | None, Any],
    optimizer: Any,
    found: BackwardOp | None = None,
    note: str | None = None,
) -> Event:
    """A parameter gradient, weight or optimizer state is non-finite (``owner``: the module
    name, parameter name and module holding it)."""
    mod_name, pname, mod = owner
    target = rec.target[index]
    key = target[1] if isinstance(target, tuple) else None
    dtype = dtype_name(rec.outs[index][1])
    what = {"pgrad": "gradient of", "weights": "weight", "state": f"optimizer state {key} of"}
    label = f"{mod_name}.{pname}" if mod_name else "a parameter"
    kind = nonfinite_kind(*(rec.values or [(0.0, 0.0)])[index])
    if rec.kind == "pgrad":
        tail = "before the optimizer step (the update was not applied)"
    else:
        opt = type(optimizer).__name__ if optimizer is not None else "optimizer"
        tail = f"after {opt}.step() from finite gradients"
    module, mtype = mod_name, type(mod).__name__ if mod is not None else None
    if found is not None and found.module is None:  # born in code outside modules
        subject, module, mtype = _op_subject(found.finding.op, dtype), None, None
    else:
        subject = _subject(mod_name or "?", mtype or "?", dtype)
        if found is not None and found.module is not None:
            module, mtype = found.module
    msg = f"{_HEAD} {rec.step}, {rec.phase}, {subject}: {what[rec.kind]} `{label}` is {kind} {tail}"
    return _event(
        msg,
        found.finding if found is not None else None,
        [f"parameter {label}"],
        note,
        phase=rec.phase,
        step=rec.step,
        module=module,
        module_type=mtype,
        dtype=dtype,
        value=kind,
    )


def scale_event(rec: Rec, note: str | None = None) -> Event:
    """The loss scale fell below 1: gradients are non-finite however small the scale."""
    scale = (rec.values or [(0.0, 0.0)])[0][1]
    msg = (
        f"{_HEAD} {rec.step}, backward, loss scale collapsed to {num(scale)}: gradients are "
        "non-finite even at a tiny scale"
    )
    return _event(msg, None, [], note, phase="backward", step=rec.step, value="inf")


def skips_event(step: int, skips: int, scale: float | None) -> Event:
    """A loss scaler skipped step after step: no scale makes the gradients finite."""
    return Event(
        kind="nonfinite",
        phase="backward",
        step=step,
        message=(
            f"{_HEAD} {step}, backward, loss scaler skipped {skips} steps in a row "
            f"(scale {num(scale)}): gradients are non-finite at every scale"
        ),
        value="inf",
        details=["GradScaler keeps finding inf/nan gradients"],
    )


def light_note(what: str, reproduced: bool) -> str:
    """Why a light step's event is built from its light checks only."""
    if not reproduced:
        return (
            f"light step: a replay of the model's {what} with every module watched "
            "did not reproduce the step's outputs (weights or inputs changed since, or "
            "the model could not be re-run); the event is built from the step's root, "
            "loss and gradient checks"
        )
    return (
        f"light step: a replay of the model's {what} with every module watched "
        "did not reproduce the non-finite value; the event is built from the "
        "step's root, loss and gradient checks"
    )


def unknown_submodule_event(rec: Rec, name: Namer, note: str) -> Event:
    """A light step's root output is non-finite from finite input, and no replay named the
    submodule that made it."""
    mname, mtype = name(rec.module), type(rec.module).__name__
    msg = (
        f"{_HEAD} {rec.step}, forward, {_subject(mname, mtype, _dtype(rec))}: "
        f"{out_summary(rec)} from finite input; the submodule that made it is unknown"
    )
    return Event(
        kind="nonfinite",
        phase="forward",
        step=rec.step,
        module=mname,
        module_type=mtype,
        dtype=_dtype(rec),
        message=msg,
        value=value_of(rec),
        details=[note],
    )
