"""Re-running parts of the model once an event is known, to name what made the value.

Three re-runs, all from a root call's recorded inputs, RNG state and autocast regions (the
weights are those the step used: the update has not landed):

* ``replay_window``: a light step's root calls (and, for a gradient, their backward from the
  gradients the step's outputs received) with every module watched, recorded into a fresh
  ``Window``; the records a detailed step would have made.
* ``rerun_to``: the root forward up to one module call, for that call's inputs (released when
  backward began) and the user's line that called it.
* ``replay_call``: one module call with every op checked (``ops.Replay``), naming the op.

``state_kept`` puts the models' buffers and the RNG back afterwards, so a script that goes on
after the stop finds what the plain run had.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch

from diagnose.report import CallFrame
from diagnose.tracer import accumulate, backward, ops
from diagnose.tracer.crosscheck import user_frames
from diagnose.tracer.stats import is_checked, iter_tensors
from diagnose.tracer.window import (
    Autocast,
    NormLayouts,
    Rec,
    Window,
    add_norms,
    confirm_nonfinite,
    read_values,
)

# Autocast is per device type; these are the ones a training script on this torch can enter.
_AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps")
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", lambda: True)
RngState = tuple[torch.Tensor, list[torch.Tensor] | None]
# Records into a fresh window with every module watched while entered (the tracer's).
Recorder = Callable[[Window], contextlib.AbstractContextManager[Any]]
Paused = Callable[[], contextlib.AbstractContextManager[Any]]


def autocast_state() -> Autocast:
    """The autocast regions a call ran in (device type, dtype): a replay made after the
    region was left must compute in the same dtypes, or an fp16 overflow would not recur."""
    if not _any_autocast():
        return ()
    state = []
    for device in _AUTOCAST_DEVICES:
        try:
            if torch.is_autocast_enabled(device):
                state.append((device, torch.get_autocast_dtype(device)))
        except (RuntimeError, TypeError, ValueError):  # a device type this build lacks
            continue
    return tuple(state)


def autocast_as(state: Autocast) -> contextlib.ExitStack:
    """Enter exactly the autocast regions of ``state``, leaving any other that is active now."""
    stack = contextlib.ExitStack()
    wanted = dict(state)
    for device, _ in autocast_state():
        if device not in wanted:
            stack.enter_context(torch.autocast(device, enabled=False))
    for device, dtype in state:
        stack.enter_context(torch.autocast(device, dtype=dtype))
    return stack


def rng_state() -> RngState:
    """CPU and (when in use) CUDA generator states: dropout in a replay draws the same masks."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def set_rng_state(state: RngState | None) -> None:
    if state is None:
        return
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def state_kept(roots: list[torch.nn.Module]) -> Iterator[None]:
    """Put the models' buffers and the RNG back as they were: the re-runs that explain an
    event update a BatchNorm's running statistics and draw dropout masks, and a script that
    goes on after the stop (a handler saving a checkpoint) must find what the plain run had."""
    kept = []
    for buffer in {id(b): b for root in roots for b in root.buffers()}.values():
        with contextlib.suppress(Exception):  # one that holds no values (a lazy module's)
            kept.append((buffer, buffer.detach().clone()))
    rng = rng_state()
    try:
        yield
    finally:
        set_rng_state(rng)
        with torch.no_grad():
            for buffer, value in kept:
                with contextlib.suppress(Exception):  # resized or freed meanwhile
                    buffer.copy_(value)


def rerun(root: Rec, grad: bool = False) -> Any:
    """Call a root module again on the inputs, RNG state and autocast regions of its recorded
    call; the RNG is put back afterwards, so the script goes on drawing what it would have."""
    saved = rng_state()
    try:
        set_rng_state(root.rng)
        with torch.set_grad_enabled(grad), autocast_as(root.autocast):
            return root.module(*root.args, **(root.kwargs or {}))
    finally:
        set_rng_state(saved)


def multi_process() -> bool:
    """A multi-process run: re-running a root forward or backward on this rank alone would
    start collectives (DDP's buffer broadcast, its gradient all-reduce) the others never join."""
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def root_of(rec: Rec, calls: dict[int, Rec]) -> Rec:
    """The root call ``rec`` ran inside (``rec`` itself for a root)."""
    while rec.parent in calls:
        rec = calls[rec.parent]
    return rec


class _Reached(Exception):
    """Stops a re-run at the module call it was after."""


def rerun_to(
    rec: Rec, calls: dict[int, Rec], paused: Paused, frames: list[CallFrame] | None = None
) -> tuple[Any, Any, ops.Site | None] | None:
    """Re-run the root forward (same inputs, RNG state and weights) up to ``rec``'s call:
    its inputs, and the user's line that called the module (None inside torch's own
    containers, such as ``nn.Sequential``). ``frames`` gets the user's frames there,
    outermost first."""
    root = root_of(rec, calls)
    if root is rec or root.args is None:
        return None
    same = [r for r in calls.values() if r.module is rec.module and root.call <= r.call <= rec.call]
    wanted = len(same) - 1  # this module's earlier calls within the same root call
    seen = [0]
    caught: list[Any] = []

    def grab(module: Any, args: Any, kwargs: Any) -> None:
        if seen[0] == wanted:
            caught.append((args, kwargs, ops.user_site(stop_at_diagnose=True)))
            if frames is not None:
                frames.extend(user_frames()[0])
            raise _Reached
        seen[0] += 1

    handle = rec.module.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with paused():
            rerun(root)
    except _Reached:
        return caught[0]
    except Exception:
        pass
    finally:
        handle.remove()
    return None


def recover_args(rec: Rec, calls: dict[int, Rec], paused: Paused) -> None:
    """Get back the inputs of ``rec``'s call, released when backward began."""
    reached = rerun_to(rec, calls, paused)
    if reached is not None:
        rec.args, rec.kwargs, _ = reached


def replay_call(
    rec: Rec,
    calls: dict[int, Rec] | None,
    paused: Paused,
    frames: list[CallFrame] | None = None,
) -> ops.OpFinding | None:
    """Re-run one module call with every op checked, to name the op and the line;
    ``frames`` gets the user's frames at the module's call (see ``rerun_to``)."""
    if rec.args is None and calls is not None:
        recover_args(rec, calls, paused)
    if rec.args is None:
        return None
    root = root_of(rec, calls or {})
    watch = ops.Replay()
    try:
        # In the autocast regions of its root call: a module rarely changes them itself.
        with paused(), torch.no_grad(), autocast_as(root.autocast), watch:
            out = rec.module.forward(*rec.args, **(rec.kwargs or {}))
    except Exception:
        out = None
    target = next(
        (
            t
            for _, t in iter_tensors(out, "o")
            if is_checked(t) and not bool(torch.isfinite(t).all())
        ),
        None,
    )
    finding = ops.find_producer(watch.records, target)
    if finding is not None and finding.record is not None:
        # confirmed by a second method: the op alone, in its own dtypes and in float64
        rec_op = finding.record
        finding.cross_check = accumulate.cross_check(rec_op, partial(autocast_as, root.autocast))
        finding.accumulation = accumulate.accumulation(rec_op, watch.records)
    at = finding.location if finding is not None else None
    in_library = at is None or ops.lacks_user_line(at)
    chain = frames is not None and not multi_process()  # the chain alone is no reason to
    if finding is not None and calls and (in_library or chain):
        # The op ran in library code (torch's own Linear, an installed model's layer): the
        # user's line is where their code called the module, the op's line its via.
        reached = rerun_to(rec, calls, paused, frames if chain else None)
        if in_library and reached is not None and ops.is_user_site(reached[2]):
            finding.location = ops.with_user_line(finding.location, reached[2])
    return finding


def replay_module_backward(
    call: Rec | None, calls: dict[int, Rec], paused: Paused
) -> tuple[ops.OpFinding, Rec] | None:
    """The op whose gradient was born non-finite inside ``call``'s module, replayed with grad
    on; else inside its parents, innermost first. The finding and the call it was found in."""
    while call is not None:
        if call.args is None:
            recover_args(call, calls, paused)
        if call.args is not None:
            with paused(), autocast_as(root_of(call, calls).autocast):
                finding = backward.replay_module_backward(call.module, call.args, call.kwargs)
            if finding is not None:
                return finding, call
        call = calls.get(call.parent)
    return None


def keep_output_grads(rec: Rec, outputs: list[torch.Tensor]) -> None:
    """Keep the gradients that reach the root's outputs: with them an event found at the
    step can replay the model's backward with every module watched (a light step's), and
    under anomaly mode with the step's own gradients (``crosscheck``, any step's).

    A model that returns its own loss (a 0-dim output, e.g. a transformers model given
    labels) is differentiated from it, so only its gradient is kept: the logits' would count
    the same path twice in a replay, and can be large.
    """
    rec.grads = grads = {}
    outs = [(i, t) for i, t in enumerate(outputs) if t.grad_fn is not None and is_checked(t)]
    for i, t in [o for o in outs if o[1].dim() == 0] or outs:
        # The hook is C code (a dict store of the node's incoming gradients): backward runs
        # no Python frame for it.
        t.grad_fn.register_prehook(partial(grads.__setitem__, (i, t.output_nr)))


def replay_window(
    recs: list[Rec],
    backward_too: bool,
    record: Recorder,
    layouts: NormLayouts,
    holding: frozenset[int] = frozenset(),
) -> tuple[list[Rec], dict[int, Rec], Rec | None] | None:
    """Re-run the window's root calls into a fresh window with every module watched (and,
    with ``backward_too``, their backward from the gradients their outputs received); one
    host read at the end.

    ``holding``: the ids of the parameters whose gradient is in question; when a root holds
    one, only such roots are re-run. With optimizers taking turns (a GAN) the window also
    holds the other model's calls, whose weights its own step has changed since: re-run,
    they would not make what the step made, and the gradients they passed back are kept at
    the outputs of the roots that hold the parameters.

    Returns the replay's records in the order a detailed step makes them (the step's own
    loss records placed between forward and backward), its calls, and its first non-finite
    record; None when the replay is not the step's computation.
    """
    roots = [r for r in recs if r.kind == "call" and r.parent < 0 and r.args is not None]
    if holding:
        holders = [r for r in roots if any(id(p) in holding for p in r.module.parameters())]
        roots = holders or roots
    if not roots or (backward_too and not any(r.grads for r in roots)):
        return None
    fresh = Window(light=False)
    try:
        with record(fresh):
            outputs = [rerun(root, grad=backward_too and root.grad_enabled) for root in roots]
            forward_recs = len(fresh.recs)
            if backward_too:
                _replay_backward(roots, outputs, fresh, layouts)
        host, offsets = fresh.read()
    except Exception:
        return None
    rrecs = fresh.recs
    rroots = [r for r in rrecs if r.kind == "call" and r.parent < 0]
    for old, new in zip(roots, rroots, strict=False):
        new.indices, new.rng, new.autocast = old.indices, old.rng, old.autocast
        new.grads = old.grads  # what a cross-check of a backward event replays from
        new.grads = old.grads  # what a cross-check of a backward event replays from
    if len(rroots) != len(roots):
        return None
    calls, first = _first_bad(rrecs, host, offsets)
    if not all(
        _same_values(old.values, new.values) for old, new in zip(roots, rroots, strict=True)
    ):
        # Weights or inputs changed since (an optimizer closure, a reused input buffer):
        # this is not the step's forward, so it names nothing.
        return None
    losses = [r for r in recs if r.kind == "loss"]
    return rrecs[:forward_recs] + losses + rrecs[forward_recs:], calls, first


def _first_bad(
    rrecs: list[Rec], host: list[float], offsets: list[int]
) -> tuple[dict[int, Rec], Rec | None]:
    calls: dict[int, Rec] = {}
    first: Rec | None = None
    for rec in rrecs:
        bad = read_values(rec, host, offsets)
        if rec.kind == "call":
            calls[rec.call] = rec
        if bad and rec.kind == "pgrad":
            bad = confirm_nonfinite(rec)
        if bad and first is None:
            first = rec
    return calls, first


def _replay_backward(
    roots: list[Rec], outputs: list[Any], window: Window, layouts: NormLayouts
) -> None:
    """Differentiate the replayed root outputs with the gradients the step's outputs
    received: module prehooks record each gradient, and the parameter gradients join the
    window as the step's own did (``autograd.grad``: nothing accumulates in ``.grad``)."""
    pairs = backward.outputs_with_grads(roots, outputs)
    outs, grads = [t for t, _ in pairs], [g for _, g in pairs]
    keep = backward.downstream_only(outs)  # an output another one was computed from
    outs, grads = [outs[i] for i in keep], [grads[i] for i in keep]  # got its share there
    params = list(
        {id(p): p for root in roots for p in root.module.parameters() if p.requires_grad}.values()
    )
    if not outs or not params:
        return
    got = torch.autograd.grad(outs, params, grads, allow_unused=True)
    pairs = [(p, g) for p, g in zip(params, got, strict=True) if g is not None]
    if pairs:
        step = roots[0].step
        owners, tensors = [p for p, _ in pairs], [g for _, g in pairs]
        add_norms(window, layouts, ("pgrad", "backward", step), owners, tensors)


def _same_values(a: list[tuple[float, float]] | None, b: list[tuple[float, float]] | None) -> bool:
    """The replay made the root outputs the step made (to rounding; inf/nan in kind)."""
    if a is None or b is None or len(a) != len(b):
        return False
    for pair_a, pair_b in zip(a, b, strict=True):
        for x, y in zip(pair_a, pair_b, strict=True):
            if math.isfinite(x) and math.isfinite(y):
                if abs(x - y) > 1e-3 * max(abs(x), abs(y)) + 1e-6:
                    return False
            elif not (x == y or (math.isnan(x) and math.isnan(y))):
                return False
    return True
