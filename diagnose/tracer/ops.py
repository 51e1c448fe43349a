"""Op-level watching: which torch op, on which line of the user's code, made the first inf/nan.

Two uses of one ``TorchFunctionMode``:
- ``LossWatch`` is active only between the end of the model's forward and ``backward()``,
  where a hand-written loss runs outside any module; it keeps each op, its call site and a
  reference to its arguments and output, looked at only when the step has an event.
- ``Replay`` re-runs one module call, once an event is known, checking every op eagerly.
Both find the producer by lineage: from the non-finite tensor back through the ops whose
inputs were already non-finite, to the op that made it from finite inputs. A ``-inf`` used
as a mask and consumed (by ``where``, ``softmax``, an integer cast) never reaches the
tensor the lineage starts from, so it is not named.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from diagnose.formatting import num
from diagnose.report import (
    Accumulation,
    CallFrame,
    CrossCheck,
    CtcSample,
    InputValues,
    Location,
    MaskedRows,
    OpSource,
    TensorStats,
)
from diagnose.tracer.alignments import ctc_samples, is_softmax, masked_rows, softmax_dim
from diagnose.tracer.operands import operand_names
from diagnose.tracer.stats import dtype_max, dtype_name, full_stats, is_checked, iter_tensors

_TORCH_DIR = os.path.dirname(torch.__file__)
_TORCH_NN = os.path.join(_TORCH_DIR, "nn") + os.sep  # torch's modules, losses, functional
_DIAGNOSE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP_PREFIXES = (_TORCH_DIR, _DIAGNOSE_DIR, "<frozen", os.path.dirname(os.__file__))

_DUNDER = {
    "__add__": "add",
    "__radd__": "add",
    "__iadd__": "add_",
    "__sub__": "sub",
    "__rsub__": "sub",
    "__mul__": "mul",
    "__rmul__": "mul",
    "__imul__": "mul_",
    "__truediv__": "div",
    "__rtruediv__": "div",
    "__itruediv__": "div_",
    "__pow__": "pow",
    "__rpow__": "pow",
    "__matmul__": "matmul",
    "__rmatmul__": "matmul",
    "__neg__": "neg",
    "__floordiv__": "floor_divide",
}

_IGNORED = {
    "__get__",
    "__set__",
    "__setitem__",
    "item",
    "tolist",
    "backward",
    "size",
    "dim",
    "numel",
    "__bool__",
    "__len__",
    "__format__",
    "__repr__",
    "__hash__",
    "detach",
    "requires_grad_",
    "retain_grad",
    "register_hook",
    "data_ptr",
    "stride",
}


# Where an op was called: (file, line, function, "file:line" of the library code it went
# through or None). A plain tuple: it is taken for every watched op, a Location only at an event.
Site = tuple[str, int, str, str | None]


def user_site(stop_at_diagnose: bool = False) -> Site | None:
    """The innermost stack frame outside torch, diagnose and the standard library, with the
    innermost installed library line on the way there (package-relative) as its ``via``.

    With ``stop_at_diagnose`` (a replay), frames beyond diagnose's own replay call are not
    the op's call site: the library line (torch's modules and functional code included) is
    all that is known, and the caller adds the user's line that called the model.
    """
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_DIAGNOSE_DIR):
        frame = frame.f_back  # the watch's own frames
    library: Site | None = None
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if stop_at_diagnose and filename.startswith(_DIAGNOSE_DIR):
            break
        if not filename.startswith(SKIP_PREFIXES):
            if not _is_library(filename):
                via = f"{library[0]}:{library[1]}" if library is not None else None
                return filename, frame.f_lineno, code.co_name, via
            library = library or (library_path(filename), frame.f_lineno, code.co_name, None)
        elif stop_at_diagnose and library is None and filename.startswith(_TORCH_NN):
            library = (library_path(filename), frame.f_lineno, code.co_name, None)
        frame = frame.f_back
    # Only library code (e.g. a loss inside transformers) called the op: name that place,
    # as its own via (see ``site_location``).
    if library is None:
        return None
    return library[0], library[1], library[2], f"{library[0]}:{library[1]}"


def library_path(filename: str) -> str:
    """An installed file as its package spells it (``transformers/models/gpt2/...``): the
    part after site-packages, or after the folder torch is installed in."""
    for marker in ("site-packages", "dist-packages"):
        at = filename.rfind(os.sep + marker + os.sep)
        if at >= 0:
            return filename[at + len(marker) + 2 :]
    if filename.startswith(_TORCH_DIR):
        return os.path.relpath(filename, os.path.dirname(_TORCH_DIR))
    return filename


def site_location(site: Site | None) -> Location | None:
    """A site as the report's Location. A site in library code only (no user line known
    there) has its library line as both its place and its ``via``; ``with_user_line`` puts
    the user's call that led there in its place."""
    if site is None:
        return None
    file, line, function, via = site
    return Location(file=file, line=line, function=function, via=via)


def lacks_user_line(location: Location) -> bool:
    """Whether ``location`` is a library line only (see ``site_location``)."""
    return location.via is not None and location.via == f"{location.file}:{location.line}"


def is_user_site(site: Site | None) -> bool:
    """Whether ``site`` is a line of the user's own code (not a library line only)."""
    return site is not None and site[3] != f"{site[0]}:{site[1]}"


def with_user_line(location: Location | None, user: Site | None) -> Location | None:
    """``location`` with the user's line in front: the user's call that led into the library
    code (or the module call) where the value was born, that code kept as ``via``."""
    if user is None or (location is not None and not lacks_user_line(location)):
        return location
    file, line, function, via = user
    inside = location.via if location is not None else via
    return Location(file=file, line=line, function=function, via=inside)


def user_location(stop_at_diagnose: bool = False) -> Location | None:
    """``user_site`` as the report's Location."""
    return site_location(user_site(stop_at_diagnose))


def _is_library(filename: str) -> bool:
    """Installed third-party code: the user's line is further out, where they called it."""
    return "site-packages" in filename or "dist-packages" in filename


@dataclass
class OpRecord:
    """One op seen by a watch: its name, call site, arguments and output.

    Recording costs no device work: whether the output is finite (``finite``) is learnt
    when an event needs it (``learn_finiteness``), and the tensor inputs are listed then too.
    """

    name: str
    site: Site | None
    output: torch.Tensor
    finite: bool | None = None
    func: Any = None  # the op itself and its arguments, to re-run it at an event
    args: tuple = ()
    kwargs: dict | None = None
    _inputs: list[tuple[str, torch.Tensor]] | None = field(default=None, repr=False)

    @property
    def inputs(self) -> list[tuple[str, torch.Tensor]]:
        if self._inputs is None:
            self._inputs = list(iter_tensors((self.args, self.kwargs or {}), "x"))
        return self._inputs


def learn_finiteness(records: list[OpRecord]) -> None:
    """Settle ``finite`` for records a light watch left open (host reads: at an event only)."""
    for rec in records:
        if rec.finite is None:
            rec.finite = _tensor_finite(rec.output)


@dataclass
class OpFinding:
    """The op that produced a non-finite value from finite inputs.

    ``targets`` is set for a classification loss op: (ignore_index, targets fed to it, how many
    of them equal ignore_index). ``backward`` marks an op whose *gradient* was non-finite from
    a finite incoming gradient (its forward output was finite).
    """

    op: str
    location: Location | None
    inputs: list[TensorStats] = field(default_factory=list)
    output: TensorStats | None = None
    detail: str = ""
    targets: tuple[int, int, int] | None = None
    backward: bool = False
    value: str | None = None  # what the op itself returned: "nan", "inf", "-inf", "inf+-inf"
    numbers: list[float] = field(default_factory=list)  # plain floats it was given (x * 1e39)
    sources: list[OpSource] = field(default_factory=list)  # inputs made with plain floats
    values: list[InputValues] = field(default_factory=list)  # its inputs as numbers
    ctc: tuple[list[CtcSample], int] | None = None  # a ctc_loss's samples without alignment
    masked: MaskedRows | None = None  # a later softmax's rows that were -inf everywhere
    call_chain: list[CallFrame] | None = None  # the user's frames from the loop to the op
    cross_check: CrossCheck | None = None  # the producer as a second method saw it
    accumulation: Accumulation | None = None  # a reducing op's result recomputed in float64
    record: OpRecord | None = field(default=None, repr=False)  # the op, to re-run it


class _Watch(TorchFunctionMode):
    """Records float-producing ops; subclasses decide what is kept and how finiteness is
    learnt."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **kwargs) if kwargs else func(*args)
        tensor = out[0] if isinstance(out, (tuple, list)) and out else out
        if (
            type(tensor) is torch.Tensor
            and (tensor.is_floating_point() or tensor.is_complex())
            and tensor.numel()
            and not tensor.is_meta
            and getattr(func, "__name__", "") not in _IGNORED
        ):
            self._record(func, args, kwargs, tensor)
        return out

    def _record(self, func: Any, args: tuple, kwargs: dict | None, output: torch.Tensor) -> None:
        raise NotImplementedError


# What a LossWatch keeps of one op: (func, args, kwargs, output, call site). A plain tuple,
# made an OpRecord by ``as_records`` only when the step has an event.
RawOp = tuple[Any, tuple, dict | None, torch.Tensor, Site | None]


class LossWatch(_Watch):
    """Light watch over user code between forward and backward: each op and its call site,
    no device work (the step's own checks say whether anything needs looking into). It runs
    every step, so it keeps each op as a ``RawOp`` tuple."""

    def _record(self, func: Any, args: tuple, kwargs: dict | None, output: torch.Tensor) -> None:
        self.records.append((func, args, kwargs, output, user_site()))


def as_records(ops: list[OpRecord | RawOp]) -> list[OpRecord]:
    """A loss watch's raw ops as OpRecords (those already made are kept as they are)."""
    return [op if isinstance(op, OpRecord) else _raw_record(*op) for op in ops]


def _raw_record(
    func: Any, args: tuple, kwargs: dict | None, output: torch.Tensor, site: Site | None
) -> OpRecord:
    name = getattr(func, "__name__", "")
    return OpRecord(
        _DUNDER.get(name, name) or str(func),
        site,
        output,
        func=func,
        args=args,
        kwargs=kwargs or {},
    )


class Replay(_Watch):
    """Eager watch used when re-running one module call after an event: each op's finiteness
    is learnt at once, and its call site stops at diagnose's own replay call."""

    def _record(self, func: Any, args: tuple, kwargs: dict | None, output: torch.Tensor) -> None:
        rec = _raw_record(func, args, kwargs, output, user_site(stop_at_diagnose=True))
        rec.finite = bool(torch.isfinite(output).all())
        self.records.append(rec)


def _tensor_finite(t: torch.Tensor) -> bool:
    if not is_checked(t) or t.numel() == 0 or t.is_meta:
        return True
    with torch.no_grad():
        return bool(torch.isfinite(t.detach()).all())


def find_producer(records: list[OpRecord], target: torch.Tensor | None) -> OpFinding | None:
    """The producing op (``_producer``), with the softmax that met a row of -inf only, if any:
    a -inf mask is finite intent until a row is masked everywhere, where softmax makes nan."""
    finding = _producer(records, target)
    if finding is not None:
        finding.masked = _masked_softmax(records)
    return finding


def _masked_softmax(records: list[OpRecord]) -> MaskedRows | None:
    for rec in records:
        dim = softmax_dim(rec.args, rec.kwargs)
        if rec.finite is not False or not is_softmax(rec.name) or dim is None or not rec.inputs:
            continue
        found = masked_rows(rec.inputs[0][1], dim)
        if found is not None:
            rows, count, total = found
            return MaskedRows(
                op=rec.name, location=site_location(rec.site), count=count, total=total, rows=rows
            )
    return None


def _producer(records: list[OpRecord], target: torch.Tensor | None) -> OpFinding | None:
    """Walk back from ``target`` through non-finite ops to the one with finite inputs.

    Without a target (or when the target was not made by a recorded op) the first op whose
    non-finite output came from finite inputs and was not consumed into a finite value by
    a later op is named.
    """
    by_output = {id(r.output): r for r in records}
    rec = by_output.get(id(target)) if target is not None else None
    if rec is not None and rec.finite is False:
        seen = set()
        while id(rec) not in seen:
            seen.add(id(rec))
            bad = [
                by_output[id(t)]
                for _, t in rec.inputs
                if id(t) in by_output and by_output[id(t)].finite is False
            ]
            if not bad:
                break
            rec = bad[0]
        return finding_of(rec, by_output)
    consumed_ok = set()
    for r in records:
        if r.finite:
            for _, t in r.inputs:
                consumed_ok.add(id(t))
    candidates = [
        r
        for r in records
        if r.finite is False
        and not any(id(t) in by_output and by_output[id(t)].finite is False for _, t in r.inputs)
    ]
    for r in candidates:
        if id(r.output) not in consumed_ok:
            return finding_of(r, by_output)
    return finding_of(candidates[0], by_output) if candidates else None


_CLASSIFICATION_LOSSES = {"cross_entropy", "nll_loss"}


def finding_of(
    rec: OpRecord,
    by_output: dict[int, OpRecord] | None = None,
    gradient: tuple[str, str] | None = None,
    incoming: str = "an incoming gradient of ones",
) -> OpFinding:
    """What ``rec`` received and returned; ``gradient`` (its backward node, "nan"/"inf") for
    an op whose gradient was born non-finite, which the detail line then says instead."""
    inputs = [full_stats(f"input[{i}]", t) for i, (_, t) in enumerate(rec.inputs)]
    output = full_stats("output", rec.output)
    roles = operand_names(rec.func, rec.name, [path for path, _ in rec.inputs], len(rec.args))
    values = [input_values(s, role) for s, role in zip(inputs, roles, strict=True)]
    parts = [describe_input(v) for v in values if v.max_abs is not None]
    numbers = _numbers(rec.args, rec.kwargs)
    parts += [_describe_number(v, rec.output) for v in numbers]
    received = f"{rec.name} received " + "; ".join(parts) if parts else f"{rec.name} output"
    value = value_kind(rec.output)
    targets = target_counts(rec.args, rec.kwargs) if rec.name in _CLASSIFICATION_LOSSES else None
    ctc = ctc_samples(rec.args, rec.kwargs) if rec.name == "ctc_loss" else None
    detail = received + _returned(value, gradient, incoming)
    if targets is not None:
        ignore, total, ignored = targets
        detail += f"; {ignored} of {total} targets equal ignore_index={ignore}"
    return OpFinding(
        rec.name,
        site_location(rec.site),
        inputs,
        output,
        detail,
        targets=targets,
        backward=gradient is not None,
        value=value,
        numbers=numbers,
        sources=_sources(rec, by_output or {}),
        values=values,
        ctc=ctc,
        record=rec,
    )


def _returned(
    value: str | None,
    gradient: tuple[str, str] | None,
    incoming: str = "an incoming gradient of ones",
) -> str:
    """The end of a detail line: what the op returned, or how its gradient went non-finite."""
    if gradient is None:
        return f" and returned {value or 'a finite value'}"
    node, kind = gradient
    if value is None:
        return f"; its gradient ({node}) is {kind} for {incoming}"
    return (
        f" and returned {value}, which later ops discarded (the loss stayed finite); its "
        f"gradient ({node}) is {kind} there: 0 times an infinite derivative"
    )


def _sources(rec: OpRecord, by_output: dict[int, OpRecord]) -> list[OpSource]:
    """The recorded ops that made ``rec``'s inputs with plain numbers: ``std + 1e-8`` feeding a
    division, whose eps may be 0 in the division's dtype."""
    sources = []
    for i, (_, t) in enumerate(rec.inputs):
        maker = by_output.get(id(t))
        numbers = _numbers(maker.args, maker.kwargs) if maker is not None else []
        if maker is not None and maker is not rec and numbers:
            sources.append(
                OpSource(
                    input=i, op=maker.name, numbers=numbers, location=site_location(maker.site)
                )
            )
    return sources


def _numbers(args: tuple, kwargs: dict | None) -> list[float]:
    """The floats an op was given beside its tensors (``x * 1e39``, ``pow(x, 0.5)``, an
    ``eps``); integers there are dims and indices, not values."""
    return [v for v in (*args, *(kwargs or {}).values()) if isinstance(v, float)]


def _describe_number(value: float, output: torch.Tensor) -> str:
    """ "the number 1.0e39 (inf in float32)": a number the op's dtype cannot hold is named so."""
    text = f"the number {num(value)}"
    limit = dtype_max(output.dtype)
    if limit is not None and math.isfinite(value) and abs(value) > limit:
        text += f" ({'-' if value < 0 else ''}inf in {dtype_name(output.dtype)})"
    return text


def input_values(s: TensorStats, role: str | None = None) -> InputValues:
    """The numbers of one op input: its statistics, with the true smallest |x| (0 when it
    holds a zero, where ``abs_min`` is the smallest non-zero one). Magnitudes are a float
    input's only, as in its statistics: an integer target's bounds are its min and max."""
    smallest = (0.0 if s.zeros else s.abs_min) if s.abs_max is not None else None
    return InputValues(
        name=s.name,
        role=role,
        dtype=s.dtype,
        min=s.min,
        max=s.max,
        min_abs=smallest,
        max_abs=s.abs_max,
    )


def describe_input(v: InputValues) -> str:
    """ "weight min |x| = 0, max |x| = 1", with the signed minimum when the input holds
    negatives; the operand's role first, when the op's signature tells it."""
    text = f"min |x| = {_num(v.min_abs)}, max |x| = {_num(v.max_abs)}"
    if v.role:
        text = f"{v.role} {text}"
    if v.min is not None and v.min < 0:
        text += f", min x = {num(v.min)}"
    return text


def target_counts(args: tuple, kwargs: dict | None) -> tuple[int, int, int] | None:
    """(ignore_index, number of class targets, how many equal ignore_index) of a call to
    ``cross_entropy``/``nll_loss``; None for probability targets or unknown arguments."""
    kwargs = kwargs or {}
    target = kwargs.get("target", args[1] if len(args) > 1 else None)
    ignore = kwargs.get("ignore_index", args[4] if len(args) > 4 else -100)
    if not isinstance(target, torch.Tensor) or target.is_floating_point():
        return None
    if isinstance(ignore, bool) or not isinstance(ignore, int):
        return None
    with torch.no_grad():
        ignored = int((target.detach() == ignore).sum())
    return ignore, int(target.numel()), ignored


def _num(v: float | None) -> str:
    """A number of the detail line; "?" for one not measured (an input without finite values)."""
    return "?" if v is None else num(v)


def value_kind(t: torch.Tensor) -> str | None:
    """The non-finite values ``t`` holds, as the report writes them; None when all finite."""
    if not is_checked(t) or t.numel() == 0 or t.is_meta:
        return None
    with torch.no_grad():
        x = t.detach()
        if x.is_complex():
            x = x.abs()
        if bool(torch.isnan(x).any()):
            return "nan"
        pos, neg = bool((x == math.inf).any()), bool((x == -math.inf).any())
    if pos and neg:
        return "inf+-inf"
    return "inf" if pos else "-inf" if neg else None
