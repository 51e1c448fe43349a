"""One step's window of records: what was seen on the device, read back once, then scanned.

Hooks append a ``Rec`` per module call, gradient, loss, loss scale and norm list, and a slot
per new float tensor holding its ``torch.aminmax`` (still on the device). At the step's check
``Window.read`` stacks every slot and norm into one host transfer; ``scan_clean`` (the common
case: everything finite) takes the history figures and the frames' values from it, and
``scan`` (a non-finite value somewhere) also gives every record its values and finds the
first non-finite one. A replay records into a fresh ``Window`` of its own.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from diagnose.tracer import ops
from diagnose.tracer.stats import (
    NEAR_LIMIT_FACTOR,
    dtype_max,
    is_checked,
    iter_tensors,
    local_tensor,
    shape_of,
)

MAX_WINDOW = 1 << 14  # records before a window is read even without a step boundary
SCALE_COLLAPSE = 1.0  # a loss scale below this: gradients are non-finite at any scale
_MAX_LAYOUTS = 8  # parameter lists whose gradient layout is kept (one per optimizer, mostly)
_NEAR: dict[torch.dtype, float] = {}
_dtype_of = operator.attrgetter("dtype")

# One tensor of a record: (name, dtype, shape, slot); slot -1 when it holds no values.
Entry = tuple[str, torch.dtype, Any, int]
Autocast = tuple[tuple[str, torch.dtype], ...]


def near_threshold(dtype: torch.dtype) -> float:
    """|x| above which a value of ``dtype`` is within NEAR_LIMIT_FACTOR of overflowing."""
    limit = _NEAR.get(dtype)
    if limit is None:
        top = dtype_max(dtype)
        limit = _NEAR[dtype] = math.inf if top is None else top / NEAR_LIMIT_FACTOR
    return limit


class Rec:
    """One entry of the check window, in the order things happened."""

    __slots__ = (
        "args",
        "autocast",
        "call",
        "chunk",
        "grad_enabled",
        "grads",
        "indices",
        "ins",
        "invalues",
        "kind",
        "kwargs",
        "module",
        "outs",
        "parent",
        "phase",
        "rng",
        "step",
        "target",
        "values",
    )

    def __init__(
        self,
        kind: str,
        phase: str,
        step: int,
        module: Any = None,
        outs: list[Entry] | None = None,
        call: int = -1,
    ) -> None:
        self.kind = kind
        self.phase = phase
        self.step = step
        self.module = module
        self.call = call
        self.parent = -1
        self.chunk = -1
        self.rng: Any = None
        self.autocast: Autocast = ()
        self.grad_enabled = True
        # A light root's output gradients: (output index, output_nr) -> the gradients its
        # autograd node received.
        self.grads: dict[tuple[int, int], tuple[Any, ...]] | None = None
        self.ins: list[Entry] = []
        self.outs: list[Entry] = [] if outs is None else outs
        self.args: Any = None
        self.kwargs: Any = None
        self.target: Any = None
        self.values: list[tuple[float, float]] | None = None
        self.invalues: list[tuple[float, float]] = []
        self.indices: list[int] | None = None

    def outputs_bad(self) -> bool:
        """Whether one of its values (read back already) is non-finite."""
        return any(not (math.isfinite(lo) and math.isfinite(hi)) for lo, hi in self.values or ())

    def inputs_bad(self) -> bool:
        return any(not (math.isfinite(lo) and math.isfinite(hi)) for lo, hi in self.invalues)

    def release(self) -> None:
        """Drop the references to activations; the host values stay for the frames."""
        self.args = self.kwargs = self.target = self.grads = None


class Window:
    """One step's records and device values, from the step's start to its one host read.

    Also what a root forward needs to be re-run at an event: the RNG and autocast state the
    open root call began in, and the stack of module calls open now.
    """

    __slots__ = (
        "backward_seen",
        "carried",
        "chunks",
        "light",
        "loss_ops",
        "loss_sources",
        "nograd_forward",
        "recs",
        "root_autocast",
        "root_rng",
        "seen",
        "stack",
        "vals",
    )

    def __init__(self, light: bool) -> None:
        self.vals: list[Any] = []  # (amin, amax) device pairs, one per slot
        self.chunks: list[list[torch.Tensor]] = []  # foreach norms, one list per norm record
        self.recs: list[Rec] = []
        self.seen: dict[int, tuple[torch.Tensor, int]] = {}  # id -> (tensor, slot)
        self.loss_sources: dict[int, torch.Tensor] = {}  # a scaled loss -> the loss it scaled
        self.loss_ops: list[ops.RawOp | ops.OpRecord] = []  # what the loss watch saw
        self.backward_seen = False  # a backward() ran since the window began
        self.nograd_forward = False  # the last root forward ran without grad
        self.light = light  # some calls went unwatched
        self.stack: list[int] = []  # the open module calls
        self.root_rng: Any = None
        self.root_autocast: Autocast = ()
        # root calls of an earlier window kept for a replay (see ``carry_other_models``)
        self.carried: list[Rec] = []

    def successor(self, light: bool) -> Window:
        """The next window: the calls open now, and the RNG and autocast state of the root
        call among them, go on into it."""
        after = Window(light)
        after.stack, after.root_rng, after.root_autocast = (
            self.stack,
            self.root_rng,
            self.root_autocast,
        )
        return after

    def empty(self) -> bool:
        return not self.vals and not self.chunks

    def slot(self, t: torch.Tensor) -> int:
        """The slot holding ``t``'s (amin, amax), reduced on the device once per tensor."""
        seen = self.seen.get(id(t))
        if seen is not None and seen[0] is t:
            return seen[1]
        x = t if type(t) is torch.Tensor or type(t) is torch.nn.Parameter else local_tensor(t)
        if x is None or not is_checked(x) or x.numel() == 0 or x.is_meta:
            return -1
        x = x.detach()
        if x.is_nested:  # ragged (e.g. a TransformerEncoder's fast path): its packed values
            x = x.values()
        if x.is_complex():
            x = x.abs()
        slot = len(self.vals)
        self.vals.append((x, x) if x.dim() == 0 else torch.aminmax(x))  # a scalar is its range
        self.seen[id(t)] = (t, slot)
        return slot

    def grad_slot(self, grad: torch.Tensor) -> int:
        """A slot for a gradient, not kept in the dedup table: holding gradients until the
        step costs memory."""
        grad = grad.detach()
        if grad.is_nested:
            grad = grad.values()
        slot = len(self.vals)
        self.vals.append(torch.aminmax(grad.abs() if grad.is_complex() else grad))
        return slot

    def release_inputs(self) -> None:
        """The forward is over: only the root calls keep their inputs (an event re-runs the
        root forward to reach a module call), so autograd can free what it no longer needs."""
        self.seen = {}
        for rec in self.recs:
            if rec.parent >= 0:
                rec.args = rec.kwargs = None

    def read(self) -> tuple[list[float], list[int]]:
        """Every device value in one stack and one host read: the (amin, amax) pairs, then
        the norm chunks (and where each chunk starts)."""
        flat = [v for pair in self.vals for v in pair]
        offsets, at = [], len(flat)
        for c in self.chunks:
            offsets.append(at)
            at += len(c)
        items = flat + [t for c in self.chunks for t in c]
        if not items:
            return [], offsets
        if items[0].is_cpu and all(t.is_cpu for t in items):
            # No device to wait for: each value read as it is costs less than a stack of
            # views, and reading a CPU tensor is no synchronisation.
            return [t.item() for t in items], offsets
        try:
            stacked = torch.stack(items)
        except RuntimeError:  # values on several devices (a CPU scalar beside GPU values)
            device = items[0].device
            stacked = torch.stack([t.to(device) for t in items])
        return stacked.tolist(), offsets


def output_entries(
    output: Any, window: Window
) -> tuple[list[Any], list[torch.Tensor], torch.Tensor | None]:
    """A call's output entries, its tensors, and the first one that is new (not a child's
    output passed on), whose autograd node a gradient hook goes on."""
    slot, seen = window.slot, window.seen
    if type(output) is torch.Tensor:
        fresh = id(output) not in seen  # a container passing on its child's output
        return (
            [("output", output.dtype, shape_of(output), slot(output))],
            [output],
            (output if fresh else None),
        )
    outs, tensors, hook_on = [], [], None
    for name, t in iter_tensors(output, "output"):
        if hook_on is None and id(t) not in seen:
            hook_on = t
        outs.append((name, t.dtype, shape_of(t), slot(t)))
        tensors.append(t)
    return outs, tensors, hook_on


def input_entries(ins: list[Any], args: Any, kwargs: Any, slot: Any) -> None:
    """The entries of a call's tensor arguments, positional then keyword."""
    for i, t in enumerate(args):
        if type(t) is torch.Tensor:
            ins.append((f"input[{i}]", t.dtype, shape_of(t), slot(t)))
        elif t is not None and not isinstance(t, (int, float, str, bool)):
            ins.extend(
                (n, u.dtype, shape_of(u), slot(u)) for n, u in iter_tensors(t, f"input[{i}]")
            )
    if kwargs:
        for key, value in kwargs.items():
            if type(value) is torch.Tensor:
                ins.append((key, value.dtype, shape_of(value), slot(value)))
            elif value is not None and not isinstance(value, (int, float, str, bool)):
                ins.extend((n, u.dtype, shape_of(u), slot(u)) for n, u in iter_tensors(value, key))


class NormLayouts:
    """The (name, dtype, shape) entries of norm records, kept per list of parameters.

    The parameter gradients repeat both every step; the parameters are held, so that no other
    tensor can take their ids while kept (a ``model.half()`` mid-run changes the dtypes, not
    the parameters)."""

    def __init__(self) -> None:
        self._known: dict[tuple[Any, ...], tuple[list[Any], list[Entry], bool]] = {}

    def layout(
        self, kind: str, owners: list[Any], ts: list[torch.Tensor]
    ) -> tuple[list[Entry], bool]:
        """The entries, and whether every tensor is float32."""
        dtypes = tuple(map(_dtype_of, ts))
        key = (tuple(map(id, owners)), dtypes) if kind == "pgrad" else None
        known = self._known.get(key) if key is not None else None
        if known is not None:
            return known[1], known[2]
        outs = [(kind, dtype, t.shape, -1) for dtype, t in zip(dtypes, ts, strict=True)]
        all_float32 = all(dtype is torch.float32 for dtype in dtypes)
        if key is not None:
            if len(self._known) >= _MAX_LAYOUTS:
                self._known.clear()
            self._known[key] = (owners, outs, all_float32)
        return outs, all_float32


def add_norms(
    window: Window,
    layouts: NormLayouts,
    rec_of: tuple[str, str, int],
    owners: list[Any],
    tensors: list[Any],
) -> None:
    """One foreach norm over a list of tensors (nan/inf anywhere shows in its norm), read with
    the window's values at the check. ``rec_of`` is the record's (kind, phase, step)."""
    kind, phase, step = rec_of
    plain, strided = torch.Tensor, torch.strided
    ts = [
        t
        if type(t) is plain and t.layout is strided and not t.is_complex() and t.numel()
        else normable(t)
        for t in tensors
    ]
    if any(t is None for t in ts):  # no values to reduce (meta, empty, a shard-less DTensor)
        kept = [(o, t) for o, t in zip(owners, ts, strict=True) if t is not None]
        owners, ts = [o for o, _ in kept], [t for _, t in kept]
    if not ts:
        return
    outs, all_float32 = layouts.layout(kind, owners, ts)
    grad_mode = torch.is_grad_enabled()
    torch._C._set_grad_enabled(False)  # a gradient made with create_graph requires grad
    try:
        if all_float32:
            norms = torch._foreach_norm(ts, 2)  # the dtype argument costs a slower path
        else:  # float32 norms (fp64 tensors cast first: the dtype argument may not narrow)
            wide = [t.float() if t.dtype == torch.float64 else t for t in ts]
            norms = torch._foreach_norm(wide, 2, dtype=torch.float32)
    finally:
        torch._C._set_grad_enabled(grad_mode)
    window.chunks.append(norms)
    rec = Rec(kind, phase, step, None, outs)
    rec.chunk = len(window.chunks) - 1
    rec.target = owners
    window.recs.append(rec)


def normable(t: Any) -> torch.Tensor | None:
    """The real, dense values a norm of ``t`` can be taken over (None: no values), with the
    same norm as ``t``: a sparse gradient's stored values (an ``Embedding(sparse=True)``'s),
    a complex tensor's real and imaginary parts side by side."""
    x = local_tensor(t)
    if x is None:
        return None
    if x.layout is not torch.strided:
        x = x.coalesce() if x.layout is torch.sparse_coo else x
        x = x.values()
        if x.numel() == 0:
            return None
    if x.is_complex():
        x = torch.view_as_real(x.resolve_conj())
    return x


@dataclass(slots=True)
class Figures:
    """The step's history figures, gathered over its windows until the step ends."""

    loss: float | None = None
    grad_norm: float | None = None  # of the gradients the optimizer was handed
    clip_norm: float | None = None  # the total norm a clip by norm measured, before clipping
    max_activation: float | None = None  # any module's output: measured on detailed steps
    max_output: float | None = None  # the root calls' outputs (the model's): every step
    lr: float | None = None
    loss_scale: float | None = None
    near_limit: bool = False


@dataclass
class Scan:
    """A window read back with a non-finite value in it: every record with its values."""

    recs: list[Rec]
    first_bad: Rec
    calls: dict[int, Rec]
    window_calls: list[Rec]  # the calls whose frames end the table
    loss_ops: list[ops.RawOp | ops.OpRecord] = field(default_factory=list)


def read_values(rec: Rec, host: list[float], offsets: list[int]) -> bool:
    """Give ``rec`` its host values (and a call its inputs' values) from the window's read;
    True when one of its values is non-finite."""
    if rec.chunk >= 0:
        at = offsets[rec.chunk]
        rec.values = [(v, v) for v in host[at : at + len(rec.outs)]]
    else:
        rec.values = _pairs(rec.outs, host)
    if rec.kind == "call":
        rec.invalues = _pairs(rec.ins, host)
    return rec.outputs_bad()


def _pairs(entries: Iterable[Entry], host: list[float]) -> list[tuple[float, float]]:
    return [(host[2 * s], host[2 * s + 1]) if s >= 0 else (0.0, 0.0) for *_, s in entries]


def carry_other_models(recs: list[Rec], stepping: set[int]) -> list[tuple[Rec, tuple]]:
    """The root calls of models the stepping optimizer does not train, with their inputs and
    the gradients their outputs will receive, for the next window.

    With optimizers taking turns (a GAN), a generator's forward runs before the
    discriminator's step and is differentiated after it: its gradients are checked in the
    next window, which a replay can only explain from this call. ``stepping``: the ids of the
    stepping optimizer's parameters.
    """
    carried = []
    for rec in recs:
        if rec.kind != "call" or rec.parent >= 0 or rec.args is None or rec.module is None:
            continue
        params = [id(p) for p in rec.module.parameters() if p.requires_grad]
        if params and stepping.isdisjoint(params):
            carried.append((rec, (rec.args, rec.kwargs, rec.grads)))
    return carried


def keep_carried(carried: list[tuple[Rec, tuple]], host: list[float]) -> list[Rec]:
    """The carried calls with their host values and what a clean scan released put back."""
    kept = []
    for rec, (args, kwargs, grads) in carried:
        rec.args, rec.kwargs, rec.grads = args, kwargs, grads
        rec.values = _pairs(rec.outs, host)
        rec.invalues = _pairs(rec.ins, host)
        kept.append(rec)
    return kept


def scan_clean(
    recs: list[Rec], host: list[float], offsets: list[int], figures: Figures, frames: int
) -> tuple[list[Rec], Rec | None]:
    """The common case, kept light: history figures, and host values for the last ``frames``
    calls only. Returns those calls, and a loss-scale record showing a collapsed scale (the
    scan stops there: that is an event)."""
    max_act = figures.max_activation or 0.0
    max_out = figures.max_output or 0.0
    near = figures.near_limit
    window_calls = []
    for rec in recs:
        if rec.kind == "call":
            window_calls.append(rec)
            if is_loss_module(rec.module):
                continue  # its output is the loss, a column of its own
            root = rec.parent < 0
            for _, dtype, _, s in rec.outs:
                if s >= 0:
                    lo, hi = host[2 * s], host[2 * s + 1]
                    m = hi if hi > -lo else -lo
                    if m > max_act:
                        max_act = m
                    if root and m > max_out:
                        max_out = m
                    if m > near_threshold(dtype):
                        near = True
        elif _clean_figure(rec, host, offsets, figures):
            return window_calls, rec
    figures.max_activation = max_act
    figures.max_output = max_out
    figures.near_limit = near
    window_calls = window_calls[-frames:]
    for rec in window_calls:  # host values for the ring buffer of frames
        rec.values = _pairs(rec.outs, host)
        rec.invalues = _pairs(rec.ins, host)
        rec.args = rec.kwargs = rec.grads = None
    return window_calls, None


def _clean_figure(rec: Rec, host: list[float], offsets: list[int], figures: Figures) -> bool:
    """Take a finite window's figure from one record that is not a call; True for a loss
    scale that collapsed."""
    kind = rec.kind
    if kind == "pgrad":
        at = offsets[rec.chunk]
        figures.grad_norm = math.hypot(figures.grad_norm or 0.0, *host[at : at + len(rec.outs)])
    elif kind == "clipnorm":
        figures.clip_norm = host[2 * rec.outs[0][3]]
    elif kind == "loss":
        _, _, shape, s = rec.outs[0]
        if len(shape) == 0 and s >= 0:
            figures.loss = host[2 * s + 1]
    elif kind == "scale":
        s = rec.outs[0][3]
        rec.values = [(host[2 * s], host[2 * s + 1])]
        figures.loss_scale = rec.values[0][1]
        return figures.loss_scale < SCALE_COLLAPSE
    return False


def scan(
    recs: list[Rec], host: list[float], offsets: list[int], figures: Figures, scaler_active: bool
) -> tuple[Rec | None, dict[int, Rec]]:
    """A window with a non-finite value: every record gets its values, the figures are taken,
    and the first non-finite record (or a collapsed loss scale) is returned with the calls."""
    peak = _Peak(figures.max_activation or 0.0, figures.max_output or 0.0, figures.near_limit)
    first_bad: Rec | None = None
    calls: dict[int, Rec] = {}
    grad_sq = 0.0
    for rec in recs:
        bad = read_values(rec, host, offsets)
        kind = rec.kind
        if kind == "call":
            calls[rec.call] = rec
            peak.add(rec)
        elif kind == "pgrad":
            bad = bad and confirm_nonfinite(rec)
            grad_sq += sum(hi * hi for _, hi in rec.values or ())
            figures.grad_norm = math.sqrt(grad_sq)
        elif kind == "clipnorm":
            bad = False  # a figure; the gradients it was measured over are checked themselves
            figures.clip_norm = (rec.values or [(None, None)])[0][0]
        elif kind == "grad" and scaler_active:
            bad = False  # inf gradients under a loss scaler: the scaler skips the step
        elif kind != "grad":
            bad = _bad_figure(rec, bad, figures)
        if bad and first_bad is None:
            first_bad = rec
    figures.max_activation, figures.near_limit = peak.max_act, peak.near
    figures.max_output = peak.max_out
    return first_bad, calls


def _bad_figure(rec: Rec, bad: bool, figures: Figures) -> bool:
    """The loss or loss scale of a non-finite window; whether the record is an event."""
    values = rec.values or [(0.0, 0.0)]
    if rec.kind == "loss" and len(rec.outs[0][2]) == 0:
        figures.loss = values[0][1]
    elif rec.kind == "scale":
        figures.loss_scale = values[0][1]
        return bad or values[0][1] < SCALE_COLLAPSE
    return bad


class _Peak:
    """The largest finite |activation| of a window (and of its root calls' outputs), and
    whether one came near its limit."""

    __slots__ = ("max_act", "max_out", "near")

    def __init__(self, max_act: float, max_out: float, near: bool) -> None:
        self.max_act = max_act
        self.max_out = max_out
        self.near = near

    def add(self, rec: Rec) -> None:
        if is_loss_module(rec.module):
            return
        root = rec.parent < 0
        for (_, dtype, _, s), (lo, hi) in zip(rec.outs, rec.values or (), strict=True):
            if s >= 0 and math.isfinite(lo) and math.isfinite(hi):
                m = max(abs(lo), abs(hi))
                self.max_act = max(self.max_act, m)
                if root:
                    self.max_out = max(self.max_out, m)
                limit = dtype_max(dtype)
                if limit is not None and m * NEAR_LIMIT_FACTOR > limit:
                    self.near = True


def is_loss_module(module: Any) -> bool:
    """An ``nn.*Loss`` module: its output is the loss, not an activation of the model."""
    return isinstance(module, torch.nn.modules.loss._Loss)


def confirm_nonfinite(rec: Rec) -> bool:
    """An fp32 norm of huge but finite values overflows: look at the values themselves, and
    take a finite one's norm again in float64."""
    for i, (lo, hi) in enumerate(rec.values or ()):
        if math.isfinite(lo) and math.isfinite(hi):
            continue
        owner = rec.target[i]
        t = owner[0] if isinstance(owner, tuple) else owner
        t = t.grad if rec.kind == "pgrad" else t
        values = None if t is None else normable(t.detach())
        if values is None or not bool(torch.isfinite(values).all()) or math.isnan(hi):
            return True
        norm = float(torch.linalg.vector_norm(values.double()))
        assert rec.values is not None
        rec.values[i] = (norm, norm)
    return False
