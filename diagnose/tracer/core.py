"""The Tracer: hooks that watch every module, loss and optimizer step for inf/nan.

Cost model (measured, see benchmarks/bench_tracer.py). Two kinds of step:

* Detailed steps (the first, every ``detail_every``-th, and each step for a while after a
  warning sign): global module hooks. Each module call does only ``torch.aminmax`` on its
  new float tensors and appends the device result to a list; modules without parameters
  also get an autograd-node prehook doing the same for the gradient of their output (a
  parameter-owning module's gradients are read at the step instead). Watching every call
  costs 1.15-1.3x on small models, mostly Python per call.
* Light steps (the others): the model's root calls only, watched through the root's class
  (``roots``: nothing is put on the model), so submodule calls run
  torch's hook-free fast path. The root's inputs and outputs, the loss, the gradients its
  outputs receive (kept on the device, not read) and the parameter gradients are checked.

Either way nothing is read back to the host until the step's single check, at the optimizer
step pre-hook (a GradScaler-skipped step, the next root forward of a loop without an
optimizer, or the tracer's exit): the window's values and one foreach norm of the parameter
gradients are read in one transfer, scanned in order, and the first non-finite one becomes
an event, before the update lands. An event on a light step first replays the step's root
calls with every module watched (from the same inputs and RNG state; for a gradient, also
the backward from the gradients the root outputs received), so it names what a detailed
step would. When backward starts, module inputs are released (only the root call's inputs
and RNG state are kept), so the tracer does not hold activations past their use. At an event
the first producer is found by looking back over the window, then pinned down to a torch op
and a line by re-running the root forward to that module call and replaying it op by op
(or, for a hand-written loss, from the ops recorded between the model's forward and
``backward()``).
"""

from __future__ import annotations

import contextlib
import math
import operator
import sys
import warnings
from collections import deque
from functools import partial
from typing import Any

import torch
from torch.nn.modules import module as _module_hooks
from torch.optim import optimizer as _optim_hooks

from diagnose.options import check_tracing
from diagnose.report import Config, Event, Frame, Location, Report, ScriptInfo, StepRecord
from diagnose.safetext import strip_escapes
from diagnose.stops import RunStopped
from diagnose.tracer import backward, ops
from diagnose.tracer.data import BatchIndices
from diagnose.tracer.events import NonFiniteDetected
from diagnose.tracer.history import StepHistory
from diagnose.tracer.roots import RAISED, RootCalls
from diagnose.tracer.stats import (
    NEAR_LIMIT_FACTOR,
    describe,
    dtype_max,
    dtype_name,
    full_stats,
    host_stats,
    is_checked,
    iter_tensors,
    local_tensor,
    nonfinite_kind,
    shape_of,
)

_RAISED: Any = RAISED  # marks an always-call hook run after forward raised
_MAX_WINDOW = 1 << 14
_NEAR: dict[torch.dtype, float] = {}


def _near_threshold(dtype: torch.dtype) -> float:
    """|x| above which a value of ``dtype`` is within NEAR_LIMIT_FACTOR of overflowing."""
    limit = _NEAR.get(dtype)
    if limit is None:
        top = dtype_max(dtype)
        limit = _NEAR[dtype] = math.inf if top is None else top / NEAR_LIMIT_FACTOR
    return limit  # records; beyond this a check runs at the next root forward


_SCALE_COLLAPSE = 1.0
# What a light step's replay can explain: values of the model's forward, the loss, gradients.
# (Weights and optimizer state after a step, and the loss scale, are seen as on a detailed step.)
_REPLAYABLE = ("call", "loss", "grad", "pgrad")
_MAX_CONSECUTIVE_SKIPS = 25
_MAX_FAULTS = 5  # distinct things the tracer could not record, kept for the report
_MAX_LAYOUTS = 8  # parameter lists whose gradient layout is kept (one per optimizer, mostly)
_dtype_of = operator.attrgetter("dtype")


class _Rec:
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
        outs: list[tuple[str, torch.dtype, Any, int]] | None = None,
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
        self.autocast: tuple[tuple[str, torch.dtype], ...] = ()
        self.grad_enabled = True
        # A light root's output gradients: (output index, output_nr) -> the gradients its
        # autograd node received.
        self.grads: dict[tuple[int, int], tuple[Any, ...]] | None = None
        self.ins: list[tuple[str, torch.dtype, Any, int]] = []
        self.outs: list[tuple[str, torch.dtype, Any, int]] = [] if outs is None else outs
        self.args: Any = None
        self.kwargs: Any = None
        self.target: Any = None
        self.values: list[tuple[float, float]] | None = None
        self.invalues: list[tuple[float, float]] = []
        self.indices: list[int] | None = None


class Tracer:
    """Context manager attaching to every module and optimizer in the process.

    ``frames``: size of the ring buffer of module calls kept for the report.
    ``backward``: also watch gradients flowing through modules (parameter gradients are
    always checked before the optimizer applies them).
    ``sample_every``: watch one optimizer step in k (1 = every step).
    ``detail_every``: hooks on every module call only on the first ``detail_first`` steps and
    on every k-th step after them (1 = every step), and on every step for ``detail_every``
    steps after one whose values came within a factor of 2 of their dtype's limit or that a
    loss scaler skipped. The steps between are light: only the model's root calls, the loss,
    the parameter gradients and the weights are checked, so submodule calls cost nothing, and
    a light step's history has the largest |activation| of the model's outputs only. When one
    of those checks finds a non-finite value, the step's root forward (and, for a gradient,
    its backward from the gradients its outputs received) is replayed from its inputs and
    RNG state with every module watched, which names the producer as a detailed step would
    (the weights are still those the step used). Multi-process runs detail every step.
    ``check_at_backward``: also check forward and loss at ``backward()`` entry, stopping a
    nan loss before backward runs, at the cost of a second host read per step. Off by
    default: the step's single read happens at the optimizer step pre-hook, before the update
    lands (a non-finite loss is still reported as phase ``loss``). Loops without a torch
    optimizer are checked at the next root forward after a ``backward()``, and at exit.
    ``stop_with``: the exception raised at the event, built from (event, frames, history);
    the command line passes ``NonFiniteStop``, which a script's ``except Exception`` does
    not catch.

    ``history``: where the per-step rows go; by default a ``StepHistory`` that keeps the
    first and last thousand steps and summarises the ones between, so memory and the report
    stay bounded however long the run.
    """

    def __init__(
        self,
        frames: int = 21,
        backward: bool = True,
        sample_every: int = 1,
        check_at_backward: bool | None = None,
        detail_every: int = 16,
        detail_first: int = 1,
        stop_with: type[BaseException] = NonFiniteDetected,
        history: StepHistory | None = None,
    ) -> None:
        check_tracing(
            frames=frames,
            sample_every=sample_every,
            detail_every=detail_every,
            detail_first=detail_first,
        )
        self.detail_every = detail_every
        self.detail_first = detail_first
        self.stop_with = stop_with
        self._light = False  # this step watches only the root calls
        self._alert = 0  # detailed steps still owed after a warning sign
        self._replaying = False
        self._loss_ops: list[ops.RawOp] = []  # what the loss watch saw, until the check
        self._module_handles: list[Any] = []
        self._root_calls = RootCalls(self._on_pre, self._on_forward)  # a light step's watch
        self.frames = frames
        self.backward = backward
        self.sample_every = sample_every
        self.check_at_backward = check_at_backward
        self.syncs = 0
        self.step = 0
        self.event: Event | None = None
        self.event_frames: list[Frame] = []
        self._rows = history if history is not None else StepHistory()  # a row per step
        self._handles: list[Any] = []
        self._patches: list[tuple[Any, str, Any]] = []
        self._layouts: dict[tuple[Any, ...], tuple[list[Any], list[Any], bool]] = {}
        self._quiet: Any = None  # the warnings filter this tracer added while attached
        self._reset_window()
        self._recent: deque[_Rec] = deque(maxlen=frames)
        self._names: dict[int, str] = {}
        self._root_labels: dict[int, str] = {}  # what the script calls each root model
        self._roots: list[torch.nn.Module] = []
        self._stack: list[int] = []
        self._ncalls = 0
        self._active = False
        self._on = True
        self._watch: ops.LossWatch | None = None
        self._idle_watch = ops.LossWatch()  # entered again each step: no mode built per step
        self._primary_opt: int | None = None
        self._optimizers_created = 0  # while attached
        self._other_optimizer_stepped = False  # one besides the primary: they take turns
        self._scaler_active = False
        self._scaler: Any = None
        self._skips = 0
        self._opt_stepped = False
        self._in_backward_call = False
        self._pending: dict[str, Any] = {}
        self._optimizers: list[Any] = []
        self._batch = BatchIndices()
        self._capture: Any = None
        self._root_rng: Any = None
        self._root_autocast: tuple[tuple[str, torch.dtype], ...] = ()
        self._faults: list[str] = []  # what the tracer could not record, for the report

    @property
    def history(self) -> list[StepRecord]:
        """One StepRecord per optimizer step over the whole run; in a long run, the steps
        between its first and last thousand are summary rows (``history_note`` says so).

        Each step appends a plain tuple, cheaply; they become StepRecords when read.
        """
        return self._rows.records()

    @property
    def steps_recorded(self) -> int:
        """How many steps the history stands for (more than its rows in a long run)."""
        return len(self._rows)

    # -- install / uninstall -------------------------------------------------------------

    def __enter__(self) -> Tracer:
        """Attach. A Tracer can be entered again after it exited (e.g. around each epoch):
        it goes on from the step, history, frames and config it had."""
        if self._active:
            raise RuntimeError("this Tracer is already attached")
        try:
            if self._light and self._roots:
                self._light = False  # the hooks are gone: install what a light step needs
                self._set_light(True)
            else:
                self._light = False
                self._add_module_hooks()
            self._handles += [
                _optim_hooks.register_optimizer_step_pre_hook(self._on_step_pre),
                _optim_hooks.register_optimizer_step_post_hook(self._on_step_post),
            ]
            self._patch(torch.Tensor, "backward", self._wrap_backward)
            self._patch(torch.autograd, "backward", self._wrap_backward)
            self._patch(torch.amp.GradScaler, "scale", self._wrap_scaler_scale)
            self._patch(torch.amp.GradScaler, "step", self._wrap_scaler_step)
            self._patch(torch.amp.GradScaler, "update", self._wrap_scaler_update)
            self._patch(torch.optim.Optimizer, "__init__", self._wrap_optimizer_init)
            self._batch.install()
            self._quiet = _quiet_compile_hook_warning()
            if self._capture is None:
                self._capture = _make_capture()
            else:
                with contextlib.suppress(Exception):
                    self._capture.install()
            self._active = True
        except BaseException:
            self._uninstall()
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            stopped = exc_type is not None and issubclass(exc_type, RunStopped)
            if self._active and self.event is None and (exc_type is None or stopped):
                # A clean end, or a stop on purpose (--max-steps): the last update is checked.
                for optimizer in self._optimizers:
                    self._after_step_state(optimizer)
                self._check()
        finally:
            self._uninstall()

    def _uninstall(self) -> None:
        self._active = False
        self._stop_watch()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._remove_module_hooks()
        if self._capture is not None:  # installed last, so undone first: it may have wrapped
            with contextlib.suppress(Exception):  # a function this tracer patched
                self._capture.uninstall()
        self._batch.uninstall()
        _restore_warnings(self._quiet)
        self._quiet = None
        for owner, name, original in reversed(self._patches):
            setattr(owner, name, original)
        self._patches.clear()

    def _add_module_hooks(self) -> None:
        """Global hooks: every module call of a detailed step (or of a replay)."""
        self._module_handles += [
            _module_hooks.register_module_forward_pre_hook(self._on_pre),
            _module_hooks.register_module_forward_hook(
                self._on_forward, with_kwargs=True, always_call=True
            ),
        ]

    def _remove_module_hooks(self) -> None:
        for handle in self._module_handles:
            handle.remove()
            # torch leaves the with_kwargs flag of a removed global hook behind
            _module_hooks._global_forward_hooks_with_kwargs.pop(handle.id, None)
        self._module_handles.clear()
        self._root_calls.stop()

    def _detailed_step(self) -> bool:
        """Whether the coming step hooks every module call: the first steps, every k-th step,
        the steps after one that came near a dtype's limit or that a loss scaler skipped, and
        every step of a multi-process run (a replay there would run collectives on one rank)."""
        return (
            self.step < self.detail_first
            or self.step % self.detail_every == 0
            or self._alert > 0
            or _distributed()
        )

    def _set_light(self, light: bool) -> None:
        """Switch between detailed steps (global hooks) and light ones (root hooks only).

        Any global module hook sends every module call through torch's slow call path; on
        a light step only the root modules' calls are watched, by the same callbacks, through
        their classes (see ``roots``): nothing is put on the model itself.
        """
        if light == self._light:
            return
        self._remove_module_hooks()
        self._light = light
        if not light:
            self._add_module_hooks()
            return
        self._window_light = True
        self._root_calls.watch(self._roots)

    def _patch(self, owner: Any, name: str, make: Any) -> None:
        original = getattr(owner, name)
        self._patches.append((owner, name, original))
        setattr(owner, name, make(original))

    # -- the window ----------------------------------------------------------------------

    def _reset_window(self) -> None:
        self._vals: list[Any] = []
        self._chunks: list[list[torch.Tensor]] = []
        self._recs: list[_Rec] = []
        self._backward_seen = False  # a backward() ran since the last check
        self._nograd_forward = False  # the last root forward ran without grad
        self._seen: dict[int, tuple[torch.Tensor, int]] = {}
        self._loss_sources: dict[int, torch.Tensor] = {}
        self._window_light = self._light  # some calls went unwatched

    def _slot(self, t: torch.Tensor) -> int:
        seen = self._seen.get(id(t))
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
        slot = len(self._vals)
        self._vals.append((x, x) if x.dim() == 0 else torch.aminmax(x))  # a scalar is its range
        self._seen[id(t)] = (t, slot)
        return slot

    # -- module hooks --------------------------------------------------------------------

    def _on_pre(self, module: torch.nn.Module, args: Any) -> None:
        if not self._active or not self._on:
            return
        if not self._stack and not self._replaying:
            self._stop_watch()
            if id(module) not in self._names:
                if not self._roots:
                    self._loss_ops = []  # ops before the model's first call prepared its input
                self._add_root(module)
            self._root_rng = _rng_state()  # to re-run this forward at an event
            self._root_autocast = _autocast_state()
            if self._recs and (
                self._nograd_forward
                or len(self._recs) > _MAX_WINDOW
                or (self._backward_seen and self._primary_opt is None)
            ):
                # No optimizer step closed the last window: a manual update, or an
                # evaluation forward that no backward can follow; one read for it now.
                self._check()
        self._ncalls += 1
        self._stack.append(self._ncalls)

    def _on_forward(
        self, module: torch.nn.Module, args: Any, kwargs: Any = None, output: Any = _RAISED
    ) -> None:
        if not self._active or not self._on or not self._stack:
            return
        call = self._stack.pop()
        if output is _RAISED:  # torch calls always-call hooks as (module, args, result) when
            return  # forward raised: the call stack is balanced, nothing is recorded
        try:
            self._record_call(module, call, args, kwargs, output)
        except Exception as exc:  # the tracer must never be what stops the script
            self._fault(f"a call of `{self._name(module)}` ({type(module).__name__})", exc)

    def _record_call(
        self, module: torch.nn.Module, call: int, args: Any, kwargs: Any, output: Any
    ) -> None:
        # The hot path: one aminmax per new float tensor, one small record, no host read.
        stack = self._stack
        slot = self._slot
        seen = self._seen
        hook_on = None
        if type(output) is torch.Tensor:
            fresh = id(output) not in seen  # a container passing on its child's output
            outs = [("output", output.dtype, shape_of(output), slot(output))]
            if fresh:
                hook_on = output
            out_tensors = [output]
        else:
            outs = []
            out_tensors = []
            for name, t in iter_tensors(output, "output"):
                if hook_on is None and id(t) not in seen:
                    hook_on = t
                outs.append((name, t.dtype, shape_of(t), slot(t)))
                out_tensors.append(t)
        rec = _Rec("call", "forward", self.step, module, outs, call)
        if stack:
            rec.parent = stack[-1]
        ins = rec.ins
        for i, t in enumerate(args):
            if type(t) is torch.Tensor:
                ins.append((f"input[{i}]", t.dtype, shape_of(t), slot(t)))
            elif t is not None and not isinstance(t, (int, float, str, bool)):
                for name, u in iter_tensors(t, f"input[{i}]"):
                    ins.append((name, u.dtype, shape_of(u), slot(u)))
        if kwargs:
            for key, value in kwargs.items():
                if type(value) is torch.Tensor:
                    ins.append((key, value.dtype, shape_of(value), slot(value)))
                elif value is not None and not isinstance(value, (int, float, str, bool)):
                    for name, u in iter_tensors(value, key):
                        ins.append((name, u.dtype, shape_of(u), slot(u)))
        rec.args, rec.kwargs = args, kwargs
        self._recs.append(rec)
        if hook_on is not None and self.backward and not module._parameters and not self._light:
            # Modules owning parameters are not hooked: a non-finite gradient reaching their
            # output shows in their parameters' gradients, read at the step anyway. Neither is
            # a light step's root: its output gradients are kept for a replay, and reach the
            # parameters' gradients too.
            node = hook_on.grad_fn
            if node is not None:
                # A prehook on the autograd node is cheaper than Tensor.register_hook and
                # also sees the gradient of a value later modified in place.
                node.register_prehook(partial(self._on_grad, module, call, hook_on.output_nr))
        if not stack:
            rec.indices = self._batch.last
            rec.rng, rec.autocast = self._root_rng, self._root_autocast
            rec.grad_enabled = torch.is_grad_enabled()
            if not self._replaying:
                self._nograd_forward = not rec.grad_enabled
                if self._light and self.backward and rec.grad_enabled:
                    self._keep_output_grads(rec, out_tensors)
                self._start_watch()

    def _keep_output_grads(self, rec: _Rec, outputs: list[torch.Tensor]) -> None:
        """On a light step, keep the gradients that reach the root's outputs: with them an
        event found at the step can replay the model's backward with every module watched.

        A model that returns its own loss (a 0-dim output, e.g. a transformers model given
        labels) is differentiated from it, so only its gradient is kept: the logits' would
        count the same path twice in a replay, and can be large.
        """
        rec.grads = grads = {}
        outs = [(i, t) for i, t in enumerate(outputs) if t.grad_fn is not None and is_checked(t)]
        for i, t in [o for o in outs if o[1].dim() == 0] or outs:
            # The hook is C code (a dict store of the node's incoming gradients): backward
            # runs no Python frame for it.
            t.grad_fn.register_prehook(partial(grads.__setitem__, (i, t.output_nr)))

    def _fault(self, what: str, exc: Exception) -> None:
        """Something the tracer could not record: the script goes on, the report says so."""
        line = f"tracer: {what} was not recorded: {type(exc).__name__}: {strip_escapes(str(exc))}"
        line = line.splitlines()[0]
        if line not in self._faults and len(self._faults) < _MAX_FAULTS:
            self._faults.append(line)

    def _on_grad(self, module: torch.nn.Module, call: int, nr: int, grads: Any) -> None:
        """Autograd node prehook: the gradient w.r.t. one module output, kept on the device."""
        if not self._active or not self._on or nr >= len(grads):
            return
        try:
            self._record_grad(module, call, grads[nr])
        except Exception as exc:  # raised here, it would fail the script's backward
            self._fault(f"a gradient of `{self._name(module)}` ({type(module).__name__})", exc)

    def _record_grad(self, module: torch.nn.Module, call: int, grad: Any) -> None:
        if grad is not None and type(grad) is not torch.Tensor:
            grad = local_tensor(grad)  # a DTensor's gradient: its local shard
        if grad is not None and grad.numel() and (grad.is_floating_point() or grad.is_complex()):
            # Not kept in the dedup table: holding gradients until the step costs memory.
            shape = shape_of(grad)
            grad = grad.detach()
            if grad.is_nested:
                grad = grad.values()
            slot = len(self._vals)
            self._vals.append(torch.aminmax(grad.abs() if grad.is_complex() else grad))
            rec = _Rec(
                "grad",
                "backward",
                self.step,
                module,
                [("grad_output", grad.dtype, shape, slot)],
                call,
            )
            self._recs.append(rec)

    def _add_root(self, root: torch.nn.Module) -> None:
        self._roots.append(root)
        self._root_labels[id(root)] = _script_name_of(root)
        mine = {id(mod) for _, mod in root.named_modules()}
        others = {name for key, name in self._names.items() if key not in mine}
        paths = {_module_path(name) for name, _ in root.named_modules() if name}
        for name, mod in root.named_modules():
            if id(mod) not in self._names or name:
                self._names[id(mod)] = _module_path(name) or type(_compiled(mod)).__name__
        if paths & others:
            # Two models with submodules of one name (a GAN's two Sequentials, both with a
            # `0`): each model's names start with what the script calls it.
            for other in self._roots:
                if any(self._names.get(id(mod)) in paths for _, mod in other.named_modules()):
                    self._prefix_names(other)

    def _prefix_names(self, root: torch.nn.Module) -> None:
        labels = [self._root_labels[id(r)] for r in self._roots if r is not root]
        label = self._root_labels[id(root)]
        if label in labels:  # two unnamed roots of one class
            label = f"{label}#{self._roots.index(root) + 1}"
            self._root_labels[id(root)] = label
        for name, mod in root.named_modules():
            self._names[id(mod)] = f"{label}.{_module_path(name)}" if name else label

    def _name(self, module: Any) -> str | None:
        if module is None:
            return None
        return self._names.get(id(module)) or type(module).__name__

    # -- the loss, between forward and backward ------------------------------------------

    def _start_watch(self) -> None:
        if self._watch is None:
            watch, self._watch = self._idle_watch, self._idle_watch
            watch.records = []
            watch.__enter__()

    def _stop_watch(self) -> None:
        watch = self._watch
        if watch is None:  # the common call: no watch running
            return
        self._watch = None
        with contextlib.suppress(Exception):  # a mode stack user code left unbalanced
            watch.__exit__(None, None, None)
        self._loss_ops.extend(watch.records)

    def _before_backward(self, tensors: Any) -> None:
        self._stop_watch()
        if not self._active or not self._on:
            return
        ts = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or ())
        for t in ts:
            if isinstance(t, torch.Tensor) and is_checked(t):
                rec = _Rec(
                    "loss", "loss", self.step, None, [("loss", t.dtype, t.shape, self._slot(t))]
                )
                rec.target = self._loss_sources.get(id(t), t)
                self._recs.append(rec)
        self._backward_seen = True
        # The forward is over: let autograd free what it no longer needs. Only the root
        # calls keep their inputs; an event re-runs the root forward to reach a module call.
        self._seen = {}
        for rec in self._recs:
            if rec.parent >= 0:
                rec.args = rec.kwargs = None
        if self.check_at_backward:
            self._check()

    def _wrap_backward(self, original: Any) -> Any:
        """Wrap ``Tensor.backward`` or ``torch.autograd.backward`` (first argument: the
        tensor(s) to differentiate); ``Tensor.backward`` calls the other, and the flag makes
        that count once."""
        tracer = self

        def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
            if tracer._in_backward_call:
                return original(tensors, *args, **kwargs)
            tracer._before_backward(tensors)
            tracer._in_backward_call = True
            try:
                return original(tensors, *args, **kwargs)
            finally:
                tracer._in_backward_call = False

        backward.__wrapped__ = original  # type: ignore[attr-defined]
        return backward

    # -- mixed precision -----------------------------------------------------------------

    def _wrap_scaler_scale(self, original: Any) -> Any:
        tracer = self

        def scale(scaler: Any, outputs: Any) -> Any:
            watch = tracer._watch
            if watch is not None:
                with torch.overrides._pop_mode_temporarily():
                    result = original(scaler, outputs)
            else:
                result = original(scaler, outputs)
            if scaler.is_enabled():
                tracer._scaler_active = True
                tracer._scaler = scaler
                if isinstance(result, torch.Tensor) and isinstance(outputs, torch.Tensor):
                    tracer._loss_sources[id(result)] = outputs
            return result

        return scale

    def _wrap_scaler_step(self, original: Any) -> Any:
        tracer = self

        def step(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            tracer._opt_stepped = False
            result = original(scaler, optimizer, *args, **kwargs)
            if scaler.is_enabled() and not tracer._opt_stepped and tracer._active:
                tracer._skips += 1
                if tracer._on:
                    tracer._check()  # the skipped step's one read (no pre-hook ran)
                tracer._end_step(skipped=True)
            elif tracer._opt_stepped:
                tracer._skips = 0
            return result

        return step

    def _wrap_optimizer_init(self, original: Any) -> Any:
        """Watch ops from the first optimizer's creation until a module runs: in a script with
        no ``nn.Module`` the loss of the very first step is then watched too (a module's
        first call ends the watch and drops what it saw, the preparation of its input)."""
        tracer = self

        def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            original(optimizer, *args, **kwargs)
            tracer._optimizers_created += 1
            if tracer._active and tracer._on and not tracer._roots:
                tracer._start_watch()

        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        return __init__

    def _wrap_scaler_update(self, original: Any) -> Any:
        tracer = self

        def update(scaler: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(scaler, *args, **kwargs)
            scale = getattr(scaler, "_scale", None)
            if tracer._active and tracer._on and isinstance(scale, torch.Tensor):
                rec = _Rec(
                    "scale",
                    "backward",
                    tracer.step,
                    None,
                    [("loss_scale", scale.dtype, scale.shape, tracer._slot(scale))],
                )
                tracer._recs.append(rec)
            return result

        return update

    # -- optimizer -----------------------------------------------------------------------

    def _on_step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        self._opt_stepped = True
        if self._primary_opt is None:
            self._primary_opt = id(optimizer)
            self._optimizers.append(optimizer)
        if not self._active:
            return None
        self._stop_watch()
        if not self._on:
            return None
        lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
        self._pending["lr"] = lr if isinstance(lr, (int, float)) else None
        # A closure (LBFGS, Lightning's training step) makes the gradients inside step: each
        # evaluation is checked before the optimizer uses it, and the gradients present now
        # are the last step's, already checked. The arguments torch hands a step pre-hook
        # start with the optimizer itself.
        if kwargs and callable(kwargs.get("closure")):
            return args, {**kwargs, "closure": self._checked_closure(kwargs["closure"], optimizer)}
        at = 1 if args and args[0] is optimizer else 0
        if len(args) > at and callable(args[at]):
            checked = self._checked_closure(args[at], optimizer)
            return (*args[:at], checked, *args[at + 1 :]), kwargs
        self._check_grads(optimizer)
        return None

    def _check_grads(self, optimizer: Any) -> None:
        """The parameter gradients the optimizer is about to use, with the rest of the window,
        in the step's one host read."""
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if params:
            self._norms("pgrad", "backward", params, [p.grad for p in params])
        self._check()

    def _checked_closure(self, closure: Any, optimizer: Any) -> Any:
        """A closure an optimizer re-evaluates inside ``step`` (forward and backward), checked
        after each call, before the optimizer uses the gradients it made."""
        tracer = self

        def checked(*args: Any, **kwargs: Any) -> Any:
            loss = closure(*args, **kwargs)
            if tracer._active and tracer._on:
                tracer._pending.pop("grad_norm", None)  # the step's norm: its last evaluation's
                tracer._check_grads(optimizer)
            return loss

        return checked

    def _on_step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._active:
            return
        # Weights and optimizer state are not reduced here: a weight the update made
        # non-finite makes its module's next output non-finite from finite input, and the
        # forward event then finds the weight (see _forward_event); the last step's
        # weights are checked when the tracer exits.
        if id(optimizer) == self._primary_opt:
            self._end_step(skipped=False)
            if self._on and (
                not self._roots or self._optimizers_created > 1 or self._other_optimizer_stepped
            ):
                # No module ever ran: a functional script whose whole step is user ops; or
                # optimizers take turns (a GAN), and what runs now prepares the next one's
                # forward (a generator's output made into the discriminator's input). Watch
                # until a module runs or backward, so a bad value made there names its op.
                self._start_watch()
        else:
            self._other_optimizer_stepped = True

    def _after_step_state(self, optimizer: Any) -> None:
        """Queue the weights and optimizer state (e.g. Adam's moments) for the next check."""
        params = [p for g in optimizer.param_groups for p in g["params"]]
        self._norms("weights", "optimizer", params, params)
        state_params, states = [], []
        for p in params:
            for key, value in optimizer.state.get(p, {}).items():
                if isinstance(value, torch.Tensor) and value.dim() and is_checked(value):
                    state_params.append((p, key))
                    states.append(value)
        if states:
            self._norms("state", "optimizer", state_params, states)

    def _norms(self, kind: str, phase: str, owners: list[Any], tensors: list[Any]) -> None:
        """One foreach norm over a list of tensors: nan/inf anywhere shows in its norm."""
        plain = torch.Tensor
        ts = [t if type(t) is plain and t.numel() else local_tensor(t) for t in tensors]
        if any(t is None for t in ts):  # no values to reduce (meta, empty, a shard-less DTensor)
            kept = [(o, t) for o, t in zip(owners, ts, strict=True) if t is not None]
            owners, ts = [o for o, _ in kept], [t for _, t in kept]
        if not ts:
            return
        outs, all_float32 = self._norm_layout(kind, owners, ts)
        grad_mode = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)  # a gradient made with create_graph requires grad
        try:
            if all_float32:
                norms = torch._foreach_norm(ts, 2)  # the dtype argument costs a slower path
            else:  # float32 norms (fp64 tensors cast first: the dtype argument may not narrow)
                norms = torch._foreach_norm(
                    [t.float() if t.dtype == torch.float64 else t for t in ts],
                    2,
                    dtype=torch.float32,
                )
        finally:
            torch._C._set_grad_enabled(grad_mode)
        self._chunks.append(norms)  # read with the window's values at the check
        rec = _Rec(kind, phase, self.step, None, outs)
        rec.chunk = len(self._chunks) - 1
        rec.target = owners
        self._recs.append(rec)

    def _norm_layout(
        self, kind: str, owners: list[Any], ts: list[torch.Tensor]
    ) -> tuple[list[tuple[str, torch.dtype, Any, int]], bool]:
        """The (name, dtype, shape) entries of a norm record, and whether every tensor is
        float32. The parameter gradients repeat both every step: they are kept per list of
        parameters and dtypes (the parameters held, so that no other tensor can take their ids
        while kept; a ``model.half()`` mid-run changes the dtypes, not the parameters)."""
        dtypes = tuple(map(_dtype_of, ts))
        key = (tuple(map(id, owners)), dtypes) if kind == "pgrad" else None
        known = self._layouts.get(key) if key is not None else None
        if known is not None:
            return known[1], known[2]
        outs = [(kind, dtype, t.shape, -1) for dtype, t in zip(dtypes, ts, strict=True)]
        all_float32 = all(dtype is torch.float32 for dtype in dtypes)
        if key is not None:
            if len(self._layouts) >= _MAX_LAYOUTS:
                self._layouts.clear()
            self._layouts[key] = (owners, outs, all_float32)
        return outs, all_float32

    def _end_step(self, skipped: bool) -> None:
        p = self._pending
        self._rows.append(
            (
                self.step,
                p.get("loss"),
                p.get("grad_norm"),
                p.get("max_activation"),
                p.get("lr"),
                p.get("loss_scale"),
                skipped,
                bool(p.get("near_limit")),
                not self._light,
            )
        )
        self._pending = {}
        if not skipped:
            self.step += 1
        self._on = self.step % self.sample_every == 0
        if p.get("near_limit") or skipped:
            self._alert = self.detail_every  # watch closely while values are near trouble
        elif self._alert:
            self._alert -= 1
        if self._active and self._roots:
            self._set_light(not self._detailed_step())
        self._scaler_active = False
        if self._skips >= _MAX_CONSECUTIVE_SKIPS and self.event is None:
            scale = p.get("loss_scale")
            self._raise(
                Event(
                    kind="nonfinite",
                    phase="backward",
                    step=self.step,
                    message=(
                        f"first non-finite: step {self.step}, backward, loss scaler skipped "
                        f"{self._skips} steps in a row (scale {describe(scale)}): "
                        "gradients are non-finite at every scale"
                    ),
                    value="inf",
                    details=["GradScaler keeps finding inf/nan gradients"],
                ),
                None,
            )

    # -- the check -----------------------------------------------------------------------

    def _check(self) -> None:
        """Read the whole window back in one transfer and look for the first non-finite."""
        self._stop_watch()
        recs = self._recs
        loss_ops, self._loss_ops = self._loss_ops, []
        if not self._vals and not self._chunks:
            self._reset_window()
            return
        host, offsets = self._read_window(self._vals, self._chunks)
        self.syncs += 1
        try:
            self._scan(recs, host, loss_ops, offsets)
        finally:
            self._reset_window()

    @staticmethod
    def _read_window(
        vals: list[Any], chunks: list[list[torch.Tensor]]
    ) -> tuple[list[float], list[int]]:
        """Every device value of a window in one stack and one host read: the (amin, amax)
        pairs, then the norm chunks (and where each chunk starts)."""
        flat = [v for pair in vals for v in pair]
        offsets, at = [], len(flat)
        for c in chunks:
            offsets.append(at)
            at += len(c)
        items = flat + [t for c in chunks for t in c]
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

    def _scan(
        self, recs: list[_Rec], host: list[float], loss_ops: list[ops.RawOp], offsets: list[int]
    ) -> None:
        if math.isfinite(sum(host)):  # nan and inf survive a sum: nothing to look into
            self._scan_clean(recs, host, offsets)
            return
        pending = self._pending
        max_act = pending.get("max_activation") or 0.0
        near = bool(pending.get("near_limit"))
        first_bad: _Rec | None = None
        calls: dict[int, _Rec] = {}
        grad_sq = 0.0
        for rec in recs:
            bad = _read_values(rec, host, offsets)
            kind = rec.kind
            if kind == "call":
                calls[rec.call] = rec
                for (_, dtype, _, s), (lo, hi) in zip(rec.outs, rec.values, strict=True):
                    if s >= 0 and math.isfinite(lo) and math.isfinite(hi):
                        m = max(abs(lo), abs(hi))
                        if m > max_act:
                            max_act = m
                        limit = dtype_max(dtype)
                        if limit is not None and m * NEAR_LIMIT_FACTOR > limit:
                            near = True
            elif kind == "loss":
                if len(rec.outs[0][2]) == 0:
                    pending["loss"] = rec.values[0][1]
            elif kind == "pgrad":
                if bad:
                    bad = self._confirm_nonfinite(rec)
                grad_sq += sum(hi * hi for _, hi in rec.values)
                pending["grad_norm"] = math.sqrt(grad_sq)
            elif kind == "scale":
                pending["loss_scale"] = rec.values[0][1]
                if rec.values[0][1] < _SCALE_COLLAPSE and first_bad is None:
                    first_bad = rec
            elif kind == "grad" and self._scaler_active:
                bad = False  # inf gradients under a loss scaler: the scaler skips the step
            if bad and first_bad is None:
                first_bad = rec
        pending["max_activation"] = max_act
        pending["near_limit"] = near
        window_calls = [rec for rec in recs if rec.kind == "call"]
        if first_bad is not None:
            self._window_calls = window_calls
            loss_ops = ops.as_records(loss_ops)
            ops.learn_finiteness(loss_ops)
            with _state_kept(self._roots):  # the explanation re-runs parts of the model
                if (
                    self._window_light
                    and first_bad.kind in _REPLAYABLE
                    and not (first_bad.kind == "call" and self._inputs_bad(first_bad))
                ):
                    self._light_event(first_bad, recs, calls, loss_ops)
                self._on_event(first_bad, recs, calls, loss_ops)
        self._recent.extend(window_calls)
        for rec in recs:  # drop references to activations; keep host values for frames
            rec.args = rec.kwargs = rec.target = rec.grads = None

    def _scan_clean(self, recs: list[_Rec], host: list[float], offsets: list[int]) -> None:
        """The common case, kept light: history figures, and host values for the frames only."""
        pending = self._pending
        max_act = pending.get("max_activation") or 0.0
        near = bool(pending.get("near_limit"))
        window_calls = []
        for rec in recs:
            kind = rec.kind
            if kind == "call":
                window_calls.append(rec)
                for _, dtype, _, s in rec.outs:
                    if s >= 0:
                        lo, hi = host[2 * s], host[2 * s + 1]
                        m = hi if hi > -lo else -lo
                        if m > max_act:
                            max_act = m
                        if m > _near_threshold(dtype):
                            near = True
            elif kind == "pgrad":
                at = offsets[rec.chunk]
                pending["grad_norm"] = math.hypot(
                    pending.get("grad_norm") or 0.0, *host[at : at + len(rec.outs)]
                )
            elif kind == "loss":
                s = rec.outs[0][3]
                if len(rec.outs[0][2]) == 0 and s >= 0:
                    pending["loss"] = host[2 * s + 1]
            elif kind == "scale":
                s = rec.outs[0][3]
                rec.values = [(host[2 * s], host[2 * s + 1])]
                pending["loss_scale"] = rec.values[0][1]
                if rec.values[0][1] < _SCALE_COLLAPSE:
                    self._on_event(rec, recs, {}, [])
        pending["max_activation"] = max_act
        pending["near_limit"] = near
        window_calls = window_calls[-self.frames :]
        for rec in window_calls:  # host values for the ring buffer of frames
            rec.values = [
                (host[2 * s], host[2 * s + 1]) if s >= 0 else (0.0, 0.0) for *_, s in rec.outs
            ]
            rec.invalues = [
                (host[2 * s], host[2 * s + 1]) if s >= 0 else (0.0, 0.0) for *_, s in rec.ins
            ]
            rec.args = rec.kwargs = rec.grads = None
        self._recent.extend(window_calls)

    @staticmethod
    def _confirm_nonfinite(rec: _Rec) -> bool:
        """An fp32 norm of huge but finite values overflows: look at the values themselves,
        and take a finite one's norm again in float64."""
        for i, (lo, hi) in enumerate(rec.values or ()):
            if math.isfinite(lo) and math.isfinite(hi):
                continue
            owner = rec.target[i]
            t = owner[0] if isinstance(owner, tuple) else owner
            t = t.grad if rec.kind == "pgrad" else t
            if t is None or not bool(torch.isfinite(t.detach()).all()) or math.isnan(hi):
                return True
            norm = float(torch.linalg.vector_norm(local_tensor(t.detach()), dtype=torch.float64))
            rec.values[i] = (norm, norm)
        return False

    # -- the event -----------------------------------------------------------------------

    def _light_event(
        self,
        first_bad: _Rec,
        recs: list[_Rec],
        calls: dict[int, _Rec],
        loss_ops: list[ops.OpRecord],
    ) -> None:
        """An event on a light step: replay its root calls with every module watched.

        The weights are those the step used (the update has not landed), so the replay,
        from the same inputs and RNG state, makes the same values. For a non-finite forward
        value its first non-finite module output is the producer a detailed step would have
        named; for a gradient, the replay also runs the model's backward from the gradients
        the step's root outputs received, so each module's gradient is seen as on a detailed
        step. When the replay does not reproduce the value, the event is built from what the
        light checks saw, and says so.
        """
        backward_born = first_bad.kind in ("pgrad", "grad")
        replay = self._replay_window(recs, backward_born and self.backward)
        if replay is not None:
            rrecs, rcalls, rbad = replay
            self._window_calls = [r for r in rrecs if r.kind == "call"]
            if rbad is not None:
                self._on_event(rbad, rrecs, rcalls, loss_ops)
            calls = rcalls  # a backward explanation walks the modules the replay saw
        if first_bad.kind in ("loss", "scale"):
            return  # the forward was finite: the light checks name these as a detailed step
        what = "forward and backward" if backward_born and self.backward else "forward"
        if replay is None:
            note = (
                f"light step: a replay of the model's {what} with every module watched "
                "did not reproduce the step's outputs (weights or inputs changed since, or "
                "the model could not be re-run); the event is built from the step's root, "
                "loss and gradient checks"
            )
        else:
            note = (
                f"light step: a replay of the model's {what} with every module watched "
                "did not reproduce the non-finite value; the event is built from the "
                "step's root, loss and gradient checks"
            )
        if first_bad.kind != "call":
            self._on_event(first_bad, recs, calls, loss_ops, note)
        name = self._name(first_bad.module)
        mtype = type(first_bad.module).__name__
        dtype = next((dtype_name(d) for _, d, *_ in first_bad.outs), None)
        msg = (
            f"first non-finite: step {first_bad.step}, forward, `{name}` ({mtype}, {dtype}): "
            f"{self._out_summary(first_bad)} from finite input; the submodule that made it "
            "is unknown"
        )
        self._raise(
            Event(
                kind="nonfinite",
                phase="forward",
                step=first_bad.step,
                module=name,
                module_type=mtype,
                dtype=dtype,
                message=msg,
                value=self._value(first_bad),
                details=[note],
            ),
            self._frames(first_bad),
        )

    def _replay_window(
        self, recs: list[_Rec], backward_too: bool = False
    ) -> tuple[list[_Rec], dict[int, _Rec], _Rec | None] | None:
        """Re-run the window's root calls under the global hooks (and, with ``backward_too``,
        their backward from the gradients their outputs received); one host read at the end.

        Returns the replay's records in the order a detailed step makes them (the step's
        own loss records placed between forward and backward), its calls, and its first
        non-finite record; None when the replay is not the step's computation.
        """
        roots = [r for r in recs if r.kind == "call" and r.parent < 0 and r.args is not None]
        if not roots or (backward_too and not any(r.grads for r in roots)):
            return None
        saved = (
            self._vals,
            self._chunks,
            self._recs,
            self._seen,
            self._loss_sources,
            self._backward_seen,
            self._nograd_forward,
            self._window_light,
            self._stack,
        )
        self._set_light(False)  # the run stops at this event: no need to go light again
        self._reset_window()
        self._stack = []
        self._replaying = True
        try:
            outputs = [_rerun(root, grad=backward_too and root.grad_enabled) for root in roots]
            forward_recs = len(self._recs)
            if backward_too:
                self._replay_backward(roots, outputs)
            rrecs = self._recs
            host, offsets = self._read_window(self._vals, self._chunks)
        except Exception:
            return None
        finally:
            self._replaying = False
            (
                self._vals,
                self._chunks,
                self._recs,
                self._seen,
                self._loss_sources,
                self._backward_seen,
                self._nograd_forward,
                self._window_light,
                self._stack,
            ) = saved
        rroots = [r for r in rrecs if r.kind == "call" and r.parent < 0]
        for old, new in zip(roots, rroots, strict=False):
            new.indices, new.rng, new.autocast = old.indices, old.rng, old.autocast
        if len(rroots) != len(roots):
            return None
        calls: dict[int, _Rec] = {}
        first: _Rec | None = None
        for rec in rrecs:
            bad = _read_values(rec, host, offsets)
            if rec.kind == "call":
                calls[rec.call] = rec
            if bad and rec.kind == "pgrad":
                bad = self._confirm_nonfinite(rec)
            if bad and first is None:
                first = rec
        if not all(
            _same_values(old.values, new.values) for old, new in zip(roots, rroots, strict=True)
        ):
            # Weights or inputs changed since (an optimizer closure, a reused input buffer):
            # this is not the step's forward, so it names nothing.
            return None
        losses = [r for r in recs if r.kind == "loss"]
        return rrecs[:forward_recs] + losses + rrecs[forward_recs:], calls, first

    def _replay_backward(self, roots: list[_Rec], outputs: list[Any]) -> None:
        """Differentiate the replayed root outputs with the gradients the step's outputs
        received: module prehooks record each gradient, and the parameter gradients join the
        window as the step's own did (``autograd.grad``: nothing accumulates in ``.grad``)."""
        outs, grads = [], []
        for root, output in zip(roots, outputs, strict=True):
            kept = {
                i: node_grads[nr]
                for (i, nr), node_grads in (root.grads or {}).items()
                if nr < len(node_grads)
            }
            for i, (_, t) in enumerate(iter_tensors(output, "output")):
                grad = kept.get(i)
                if grad is not None and t.requires_grad:
                    outs.append(t)
                    grads.append(grad)
        keep = backward.downstream_only(outs)  # an output another one was computed from
        outs, grads = [outs[i] for i in keep], [grads[i] for i in keep]  # got its share there
        params = list(
            {
                id(p): p for root in roots for p in root.module.parameters() if p.requires_grad
            }.values()
        )
        if not outs or not params:
            return
        got = torch.autograd.grad(outs, params, grads, allow_unused=True)
        pairs = [(p, g) for p, g in zip(params, got, strict=True) if g is not None]
        if pairs:
            self._norms("pgrad", "backward", [p for p, _ in pairs], [g for _, g in pairs])

    def _on_event(
        self,
        rec: _Rec,
        recs: list[_Rec],
        calls: dict[int, _Rec],
        loss_ops: list[ops.OpRecord],
        note: str | None = None,
    ) -> None:
        kind = rec.kind
        producer: _Rec | None = None
        event: Event
        if kind == "call":
            event, producer = self._forward_event(rec, calls)
        elif kind == "loss":
            event = self._loss_event(rec, loss_ops)
        elif kind == "grad":
            event, producer = self._grad_event(rec, recs)
            self._explain_backward(event, rec, recs, calls, loss_ops)
        elif kind == "scale":
            scale = rec.values[0][1]
            event = Event(
                kind="nonfinite",
                phase="backward",
                step=rec.step,
                value="inf",
                message=(
                    f"first non-finite: step {rec.step}, backward, loss scale "
                    f"collapsed to {describe(scale)}: gradients are non-finite "
                    "even at a tiny scale"
                ),
            )
        else:
            event = self._param_event(rec)
            if kind == "pgrad":
                self._explain_backward(event, rec, recs, calls, loss_ops)
        if note is not None and event.op is None:  # a named op answers what the replay did not
            event.details.append(note)
        frames = self._frames(producer)
        finding = getattr(self, "_finding", None)
        if finding is not None and producer is None and event.module is None:
            # Born in an op outside any module: its own row ends the frames table.
            frames = [*frames[len(frames) + 1 - self.frames :], self._op_frame(rec, finding)]
        self._raise(event, frames)

    def _op_frame(self, rec: _Rec, finding: ops.OpFinding) -> Frame:
        phase = "backward" if finding.backward else "loss"
        outputs = [finding.output] if finding.output is not None else []
        return Frame(
            index=self._ncalls + 1,
            step=rec.step,
            phase=phase,
            module=None,
            module_type=finding.op,
            inputs=list(finding.inputs),
            outputs=outputs,
            producer=True,
        )

    def _raise(self, event: Event, frames: list[Frame] | None) -> None:
        self.event = event
        self.event_frames = frames if frames is not None else self._frames(None)
        self._active = False
        self._stop_watch()
        raise self.stop_with(event, self.event_frames, list(self.history))

    def _forward_event(self, rec: _Rec, calls: dict[int, _Rec]) -> tuple[Event, _Rec]:
        in_bad = self._inputs_bad(rec)
        root = rec
        while root.parent in calls:
            root = calls[root.parent]
        if in_bad and (root is rec or self._inputs_bad(root)):
            return self._input_event(root), root
        producer = rec
        while self._inputs_bad(producer) and producer.parent in calls:
            # Made between child modules, in a parent's own code: the innermost parent whose
            # inputs were still finite (no module that finished earlier output it).
            producer = calls[producer.parent]
        module = producer.module
        phase = "loss" if isinstance(module, torch.nn.modules.loss._Loss) else "forward"
        name = self._name(module)
        out_stats = self._out_summary(rec)
        dtype = next((dtype_name(d) for _, d, *_ in rec.outs), None)
        weights = [full_stats(n, p) for n, p in module.named_parameters(recurse=False)]
        bad_weights = [w for w in weights if not w.finite]
        if bad_weights and self.step > 0:
            return self._weight_event(rec, producer, bad_weights[0]), producer
        finding = self._replay(producer, calls)
        wmax = max((w.abs_max for w in weights if w.abs_max is not None), default=None)
        if producer is rec:
            what = f"{out_stats} from finite input"
        else:  # made in the parent's own code, first seen coming out of a submodule
            what = (
                f"made non-finite in its own forward from finite inputs; "
                f"`{self._name(rec.module)}` ({type(rec.module).__name__}) received it "
                f"and its {out_stats}"
            )
        msg = (
            f"first non-finite: step {rec.step}, {phase}, `{name}` "
            f"({type(module).__name__}, {dtype}): {what}"
        )
        if wmax is not None:
            msg += f", weight |x| max {describe(wmax)}"
        event = Event(
            kind="nonfinite",
            phase=phase,
            step=rec.step,
            module=name,
            module_type=type(module).__name__,
            dtype=dtype,
            message=msg,
            value=self._value(rec),
        )
        self._apply_finding(event, finding)
        return event, producer

    def _explain_backward(
        self,
        event: Event,
        rec: _Rec,
        recs: list[_Rec],
        calls: dict[int, _Rec],
        loss_ops: list[ops.OpRecord],
    ) -> None:
        """Name the op whose gradient was born non-finite: first among the ops recorded outside
        modules (on the graph path to the bad parameters), else inside the module the event
        names, replayed with grad on."""
        loss = next((r.target for r in reversed(recs) if r.kind == "loss"), None)
        params = None
        if rec.kind == "pgrad":
            params = [
                rec.target[i]
                for i, (lo, hi) in enumerate(rec.values or ())
                if not (math.isfinite(lo) and math.isfinite(hi))
            ]
        was = self._active
        self._active = False
        try:
            finding = backward.find_backward_producer(loss_ops, loss, params)
            if finding is not None:  # born in code outside modules: lead with the op
                event.message = event.message.replace(
                    f"`{event.module}` ({event.module_type}, ", f"op `{finding.op}` (", 1
                ).replace(" from finite incoming gradients", "", 1)  # the op's own was not
                event.module = event.module_type = None
            else:
                call = next(
                    (
                        r
                        for r in reversed(list(calls.values()))
                        if self._name(r.module) == event.module
                    ),
                    None,
                )
                while call is not None and finding is None:  # the module, then its parents
                    if call.args is None:
                        self._recover_args(call, calls)
                    if call.args is not None:
                        with _autocast_as(self._root_of(call, calls).autocast):
                            finding = backward.replay_module_backward(
                                call.module, call.args, call.kwargs
                            )
                    if finding is not None and call.module is not None:
                        event.module = self._name(call.module)
                        event.module_type = type(call.module).__name__
                    call = calls.get(call.parent)
        except Exception:
            finding = None
        finally:
            self._active = was
        if finding is not None:
            self._apply_finding(event, finding)

    def _weight_event(self, rec: _Rec, producer: _Rec, weight: Any) -> Event:
        """A weight the previous optimizer step made non-finite (from finite gradients)."""
        module = producer.module
        name = self._name(module)
        step = max(rec.step - 1, 0)
        opt = self._optimizers[0] if self._optimizers else None
        label = f"{name}.{weight.name}"
        details = [f"parameter {label}"]
        param = getattr(module, weight.name, None)
        if opt is not None and param is not None:
            for key, value in opt.state.get(param, {}).items():
                if isinstance(value, torch.Tensor) and value.dim():
                    st = full_stats(key, value)
                    details.append(f"optimizer state {key}: |x| max {describe(st.abs_max)}")
        value = "nan" if weight.nan else "inf"
        msg = (
            f"first non-finite: step {step}, optimizer, `{name}` ({type(module).__name__}, "
            f"{weight.dtype}): weight `{label}` is {value} after "
            f"{type(opt).__name__ if opt else 'the optimizer'}.step() from finite gradients"
        )
        return Event(
            kind="nonfinite",
            phase="optimizer",
            step=step,
            module=name,
            module_type=type(module).__name__,
            dtype=weight.dtype,
            message=msg,
            value=value,
            details=details,
        )

    @staticmethod
    def _inputs_bad(rec: _Rec) -> bool:
        return any(not (math.isfinite(lo) and math.isfinite(hi)) for lo, hi in rec.invalues)

    def _input_event(self, root: _Rec) -> Event:
        name = self._name(root.module)
        bad = [
            (n, d)
            for (n, d, _, s), (lo, hi) in zip(root.ins, root.invalues, strict=True)
            if not (math.isfinite(lo) and math.isfinite(hi))
        ]
        what = bad[0][0] if bad else "input"
        dtype = dtype_name(bad[0][1]) if bad else None
        indices = self._bad_rows(root, what)
        msg = (
            f"first non-finite: step {root.step}, input, `{name}` "
            f"({type(root.module).__name__}, {dtype}): {what} already non-finite "
            f"in the batch fed to the model"
        )
        if indices:
            msg += f" (dataset indices {indices[:8]})"
        return Event(
            kind="nonfinite",
            phase="input",
            step=root.step,
            module=name,
            module_type=type(root.module).__name__,
            dtype=dtype,
            message=msg,
            sample_indices=indices or None,
            location=getattr(self, "_input_loc", None),
        )

    def _bad_rows(self, root: _Rec, what: str) -> list[int]:
        tensors = dict(iter_tensors(root.args, "input"))
        if root.kwargs:
            tensors.update({k[7:]: v for k, v in iter_tensors(root.kwargs, "kwargs")})
        t = tensors.get(what)
        batch = root.indices
        if t is None or t.dim() == 0 or type(t) not in (torch.Tensor, torch.nn.Parameter):
            return []  # a sharded tensor's rows are not the batch's rows
        with torch.no_grad():
            rows = (~torch.isfinite(t.detach())).reshape(t.shape[0], -1).any(1)
            bad = rows.nonzero().flatten().tolist()
        found = self._batch.lookup(t, bad)  # the batch this tensor came from
        if found is not None:
            return found
        if batch is not None and len(batch) == t.shape[0]:
            return [batch[i] for i in bad]
        return []

    def _loss_event(self, rec: _Rec, loss_ops: list[ops.OpRecord]) -> Event:
        finding = ops.find_producer(loss_ops, rec.target) if loss_ops else None
        dtype = dtype_name(rec.outs[0][1])
        lo, hi = rec.values[0]
        if finding is not None:
            where = (
                f" at {finding.location.file}:{finding.location.line}" if finding.location else ""
            )
            msg = (
                f"first non-finite: step {rec.step}, loss, op `{finding.op}`{where}: "
                f"{finding.detail}"
            )
        else:
            msg = (
                f"first non-finite: step {rec.step}, loss ({dtype}) is "
                f"{nonfinite_kind(lo, hi)} from finite model outputs"
            )
        event = Event(
            kind="nonfinite",
            phase="loss",
            step=rec.step,
            dtype=dtype,
            message=msg,
            value=nonfinite_kind(lo, hi),
        )
        self._apply_finding(event, finding)
        return event

    def _grad_event(self, rec: _Rec, recs: list[_Rec]) -> tuple[Event, _Rec | None]:
        grads = [r for r in recs if r.kind == "grad"]
        i = grads.index(rec)
        # The module whose backward made it: the one backward visited before (modules that own
        # parameters are not hooked, so for the first one, the next call after it that owns
        # parameters: the Linear a ReLU fed).
        maker = grads[i - 1].module if i > 0 else self._next_owner(rec, recs) or rec.module
        name = self._name(maker)
        lo, hi = rec.values[0]
        dtype = dtype_name(rec.outs[0][1])
        src = self._name(rec.module)
        msg = (
            f"first non-finite: step {rec.step}, backward, `{name}` "
            f"({type(maker).__name__}, {dtype}): gradient {nonfinite_kind(lo, hi)} "
            f"w.r.t. the output of `{src}` from finite incoming gradients"
        )
        event = Event(
            kind="nonfinite",
            phase="backward",
            step=rec.step,
            module=name,
            module_type=type(maker).__name__,
            dtype=dtype,
            message=msg,
            value=nonfinite_kind(lo, hi),
        )
        producer = next((r for r in self._recent if r.module is maker), None)
        return event, producer

    @staticmethod
    def _next_owner(rec: _Rec, recs: list[_Rec]) -> Any:
        """The module called right after ``rec``'s module within its parent, when it owns
        parameters (its backward, not hooked, is what sent ``rec``'s output its gradient)."""
        calls = [r for r in recs if r.kind == "call"]
        mine = next((r for r in calls if r.module is rec.module and r.call == rec.call), None)
        if mine is None:
            return None
        later = [r for r in calls if r.parent == mine.parent and r.call > mine.call]
        nxt = min(later, key=lambda r: r.call, default=None)
        return nxt.module if nxt is not None and nxt.module._parameters else None

    def _param_event(self, rec: _Rec) -> Event:
        owners = self._param_owners()
        bad = [
            i
            for i, (lo, hi) in enumerate(rec.values)
            if not (math.isfinite(lo) and math.isfinite(hi))
        ]
        idx = bad[0]
        if rec.kind == "pgrad":
            # Backward runs the forward in reverse: of the modules with a non-finite
            # gradient, the one whose forward ran last is where backward met it first.
            last_call = {id(r.module): r.call for r in getattr(self, "_window_calls", ())}

            def ran_at(i: int) -> int:
                owner = rec.target[i]
                module = owners.get(id(owner), (None, None, None))[2]
                return last_call.get(id(module), -1)

            idx = max(bad, key=ran_at)
        owner = rec.target[idx]
        key = None
        if isinstance(owner, tuple):
            owner, key = owner
        mod_name, pname, mod = owners.get(id(owner), (None, None, None))
        dtype = dtype_name(rec.outs[idx][1])
        what = {"pgrad": "gradient of", "weights": "weight", "state": f"optimizer state {key} of"}
        label = f"{mod_name}.{pname}" if mod_name else "a parameter"
        opt = type(self._optimizers[0]).__name__ if self._optimizers else "optimizer"
        lo, hi = rec.values[idx]
        if rec.kind == "pgrad":
            tail = "before the optimizer step (the update was not applied)"
        else:
            tail = f"after {opt}.step() from finite gradients"
        msg = (
            f"first non-finite: step {rec.step}, {rec.phase}, `{mod_name or '?'}` "
            f"({type(mod).__name__ if mod is not None else '?'}, {dtype}): "
            f"{what[rec.kind]} `{label}` is {nonfinite_kind(lo, hi)} {tail}"
        )
        return Event(
            kind="nonfinite",
            phase=rec.phase,
            step=rec.step,
            module=mod_name,
            module_type=type(mod).__name__ if mod is not None else None,
            dtype=dtype,
            message=msg,
            value=nonfinite_kind(lo, hi),
            details=[f"parameter {label}"],
        )

    def _param_owners(self) -> dict[int, tuple[str, str, torch.nn.Module]]:
        owners: dict[int, tuple[str, str, torch.nn.Module]] = {}
        for root in self._roots:
            for mname, mod in root.named_modules():
                for pname, p in mod.named_parameters(recurse=False):
                    owners.setdefault(id(p), (mname or type(root).__name__, pname, mod))
        return owners

    @staticmethod
    def _root_of(rec: _Rec, calls: dict[int, _Rec]) -> _Rec:
        """The root call ``rec`` ran inside (``rec`` itself for a root)."""
        while rec.parent in calls:
            rec = calls[rec.parent]
        return rec

    def _recover_args(self, rec: _Rec, calls: dict[int, _Rec]) -> None:
        """Get back the inputs of ``rec``'s call, released when backward began."""
        reached = self._rerun_to(rec, calls)
        if reached is not None:
            rec.args, rec.kwargs, _ = reached

    def _rerun_to(
        self, rec: _Rec, calls: dict[int, _Rec]
    ) -> tuple[Any, Any, ops.Site | None] | None:
        """Re-run the root forward (same inputs, RNG state and weights) up to ``rec``'s call:
        its inputs, and the user's line that called the module (None inside torch's own
        containers, such as ``nn.Sequential``)."""
        root = self._root_of(rec, calls)
        if root is rec or root.args is None:
            return None
        same = sorted(
            r.call
            for r in calls.values()
            if r.module is rec.module and root.call <= r.call <= rec.call
        )
        wanted = len(same) - 1  # this module's earlier calls within the same root call
        seen = [0]
        caught: list[Any] = []

        class _Got(Exception):
            pass

        def grab(module: Any, args: Any, kwargs: Any) -> None:
            if seen[0] == wanted:
                caught.append((args, kwargs, ops.user_site(stop_at_diagnose=True)))
                raise _Got
            seen[0] += 1

        handle = rec.module.register_forward_pre_hook(grab, with_kwargs=True)
        was = self._active
        self._active = False
        try:
            _rerun(root)
        except _Got:
            return caught[0]
        except Exception:
            pass
        finally:
            handle.remove()
            self._active = was
        return None

    def _replay(self, rec: _Rec, calls: dict[int, _Rec] | None = None) -> ops.OpFinding | None:
        """Re-run one module call with every op checked, to name the op and the line."""
        if rec.args is None and calls is not None:
            self._recover_args(rec, calls)
        if rec.args is None:
            return None
        root = self._root_of(rec, calls or {})
        watch = ops.Replay()
        was = self._active
        self._active = False
        try:
            # In the autocast regions of its root call: a module rarely changes them itself.
            with torch.no_grad(), _autocast_as(root.autocast), watch:
                out = rec.module.forward(*rec.args, **(rec.kwargs or {}))
        except Exception:
            out = None
        finally:
            self._active = was
        target = next(
            (
                t
                for _, t in iter_tensors(out, "o")
                if is_checked(t) and not bool(torch.isfinite(t).all())
            ),
            None,
        )
        finding = ops.find_producer(watch.records, target)
        if finding is not None and finding.location is None and calls:
            # The op ran in torch's own module code (a Linear, an RNN): the user's line is
            # where their code called the module.
            reached = self._rerun_to(rec, calls)
            if reached is not None:
                finding.location = ops.site_location(reached[2])
        return finding

    def _apply_finding(self, event: Event, finding: ops.OpFinding | None) -> None:
        if finding is None:
            return
        self._finding = finding
        event.op = finding.op
        if not finding.backward:
            event.op_value = finding.value
        event.location = finding.location
        event.op_inputs = finding.inputs
        event.op_numbers = finding.numbers or None
        event.op_input_sources = finding.sources or None
        event.details.append(finding.detail)
        if finding.targets is not None:
            event.ignore_index, event.targets_total, event.targets_ignored = finding.targets
        if event.phase != "loss" and finding.location is not None:
            loc = finding.location
            born = "born in the backward of op" if finding.backward else "op"
            event.message += f"; {born} `{finding.op}` at {loc.file}:{loc.line}: {finding.detail}"

    def _value(self, rec: _Rec) -> str | None:
        for lo, hi in rec.values or ():
            if not (math.isfinite(lo) and math.isfinite(hi)):
                return nonfinite_kind(lo, hi)
        return None

    def _out_summary(self, rec: _Rec) -> str:
        for (name, _, _, _), (lo, hi) in zip(rec.outs, rec.values or (), strict=False):
            if not (math.isfinite(lo) and math.isfinite(hi)):
                label = "output" if name == "output" else name
                if math.isnan(lo) or math.isnan(hi):
                    return f"{label} has nan"
                return f"{label} |x| max = inf"
        return "output non-finite"

    # -- frames and the report -----------------------------------------------------------

    def _frames(self, producer: _Rec | None) -> list[Frame]:
        recs = list(self._recent) + getattr(self, "_window_calls", [])
        if producer is not None and producer in recs:
            recs = recs[: recs.index(producer) + 1]
        frames = []
        for i, rec in enumerate(recs[-self.frames :]):
            frames.append(self._frame(i, rec, rec is producer))
        return frames

    def _frame(self, index: int, rec: _Rec, producer: bool) -> Frame:
        module = rec.module
        ins = [
            host_stats(n, d, sh, lo, hi)
            for (n, d, sh, s), (lo, hi) in zip(rec.ins, rec.invalues, strict=False)
            if s >= 0
        ]
        outs = [
            host_stats(n, d, sh, lo, hi)
            for (n, d, sh, s), (lo, hi) in zip(rec.outs, rec.values or (), strict=False)
            if s >= 0
        ]
        # The weights are read now: they are the call's own only if no update ran since.
        weights = (
            [full_stats(n, p) for n, p in module.named_parameters(recurse=False)]
            if rec.step == self.step
            else []
        )
        phase = "loss" if isinstance(module, torch.nn.modules.loss._Loss) else rec.phase
        return Frame(
            index=rec.call if rec.call >= 0 else index,
            step=rec.step,
            phase=phase,
            module=self._name(module),
            module_type=type(module).__name__,
            inputs=ins,
            outputs=outs,
            weights=weights,
            producer=producer,
        )

    def report(self) -> Report:
        """The run so far as a Report (no symptoms or fixes: the engine adds those)."""
        config = Config()
        if self._capture is not None:
            try:
                config = Config.model_validate(self._capture.snapshot())
            except Exception:
                config = Config()
        frames = self.event_frames if self.event is not None else self._frames(None)
        return Report(
            status="nonfinite" if self.event is not None else "clean",
            script=ScriptInfo(path=sys.argv[0] if sys.argv else "<python>", argv=sys.argv[1:]),
            event=self.event,
            frames=frames,
            history=list(self.history),
            config=config,
            warnings=list(self._faults),
            history_note=self._rows.note(),
        )


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


def _rerun(root: _Rec, grad: bool = False) -> Any:
    """Call a root module again on the inputs, RNG state and autocast regions of its recorded
    call; the RNG is put back afterwards, so the script goes on drawing what it would have."""
    saved = _rng_state()
    try:
        _set_rng_state(root.rng)
        with torch.set_grad_enabled(grad), _autocast_as(root.autocast):
            return root.module(*root.args, **(root.kwargs or {}))
    finally:
        _set_rng_state(saved)


@contextlib.contextmanager
def _state_kept(roots: list[torch.nn.Module]) -> Any:
    """Put the models' buffers and the RNG back as they were: the re-runs that explain an
    event update a BatchNorm's running statistics and draw dropout masks, and a script that
    goes on after the stop (a handler saving a checkpoint) must find what the plain run had."""
    kept = []
    for buffer in {id(b): b for root in roots for b in root.buffers()}.values():
        with contextlib.suppress(Exception):  # one that holds no values (a lazy module's)
            kept.append((buffer, buffer.detach().clone()))
    rng = _rng_state()
    try:
        yield
    finally:
        _set_rng_state(rng)
        with torch.no_grad():
            for buffer, value in kept:
                with contextlib.suppress(Exception):  # resized or freed meanwhile
                    buffer.copy_(value)


# Autocast is per device type; these are the ones a training script on this torch can enter.
_AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps")
_any_autocast = getattr(torch._C, "_is_any_autocast_enabled", lambda: True)


def _autocast_state() -> tuple[tuple[str, torch.dtype], ...]:
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


def _autocast_as(state: tuple[tuple[str, torch.dtype], ...]) -> contextlib.ExitStack:
    """Enter exactly the autocast regions of ``state``, leaving any other that is active now."""
    stack = contextlib.ExitStack()
    wanted = dict(state)
    for device, _ in _autocast_state():
        if device not in wanted:
            stack.enter_context(torch.autocast(device, enabled=False))
    for device, dtype in state:
        stack.enter_context(torch.autocast(device, dtype=dtype))
    return stack


def _rng_state() -> tuple[torch.Tensor, list[torch.Tensor] | None]:
    """CPU and (when in use) CUDA generator states: dropout in a replay draws the same masks."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state: tuple[torch.Tensor, list[torch.Tensor] | None] | None) -> None:
    if state is None:
        return
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def _make_capture() -> Any:
    try:
        from diagnose.capture import ConfigCapture
    except ImportError:
        return None
    try:
        capture = ConfigCapture()
        capture.install()
    except Exception:
        return None
    return capture


__all__ = ["Location", "NonFiniteDetected", "Tracer"]


def _read_values(rec: _Rec, host: list[float], offsets: list[int]) -> bool:
    """Give ``rec`` its host values (and a call its inputs' values) from the window's read;
    True when one of its values is non-finite."""
    if rec.chunk >= 0:
        at = offsets[rec.chunk]
        rec.values = [(v, v) for v in host[at : at + len(rec.outs)]]
    else:
        rec.values = [
            (host[2 * s], host[2 * s + 1]) if s >= 0 else (0.0, 0.0) for *_, s in rec.outs
        ]
    if rec.kind == "call":
        rec.invalues = [
            (host[2 * s], host[2 * s + 1]) if s >= 0 else (0.0, 0.0) for *_, s in rec.ins
        ]
    return not all(math.isfinite(lo) and math.isfinite(hi) for lo, hi in rec.values)


def _quiet_compile_hook_warning() -> Any:
    """Hide torch's warning that global module hooks fire once more around a ``torch.compile``
    wrapper: the hooks are the tracer's, which counts that call as the model's own, and the
    script did nothing to be warned about. Returns the filter, to take it out at detach."""
    warnings.filterwarnings(
        "ignore",
        message=r"Using `torch\.compile\(module\)` when there are "
        r"global hooks on modules",
        category=UserWarning,
    )
    return warnings.filters[0]


def _restore_warnings(entry: Any) -> None:
    if entry is None:
        return
    with contextlib.suppress(ValueError):  # the script reset the filters itself
        warnings.filters.remove(entry)
        mutated = getattr(warnings, "_filters_mutated", None)
        if callable(mutated):
            mutated()  # the module caches filter decisions per call site


def _module_path(name: str) -> str:
    """A module's name as the script spells it: ``torch.compile`` wraps a model in a module
    whose ``_orig_mod`` is the model, a step no attribute path of the script has."""
    if "_orig_mod" not in name:
        return name
    return ".".join(part for part in name.split(".") if part != "_orig_mod")


def _script_name_of(root: torch.nn.Module) -> str:
    """The name the calling code gives a root model (``netG``, ``self.generator``), read
    from the first frame outside torch and diagnose; else its class name."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(ops.SKIP_PREFIXES):
        frame = frame.f_back
    try:
        if frame is not None:
            owner = frame.f_locals.get("self")
            modules = getattr(owner, "_modules", None)
            for space in (
                frame.f_locals,
                modules if isinstance(modules, dict) else {},
                frame.f_globals,
            ):
                name = next((k for k, v in space.items() if v is root and k != "self"), None)
                if isinstance(name, str):
                    return name
    except Exception:  # odd objects in the caller's namespace: the class name will do
        pass
    return type(_compiled(root)).__name__


def _compiled(module: Any) -> Any:
    """The model inside ``torch.compile``'s wrapper (for its class name), else the module."""
    inner = getattr(module, "_orig_mod", None)
    return _compiled(inner) if isinstance(inner, torch.nn.Module) else module


def _distributed() -> bool:
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
