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
an event, before the update lands.

The parts, in the order a value goes through them:

* ``hooks``: installs and removes everything on one ``ExitStack``; its wrappers call the
  Tracer's callbacks below.
* ``window``: one step's records and device values; its host read and its scan.
* ``replay``: re-runs parts of the model at an event, into a fresh window.
* ``investigate`` and ``explain``: from the first non-finite record to the Event (its
  message written once) and ``frames``.

The Tracer is the facade: it holds the run's state across steps and decides, call by call,
what goes into the window.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections import deque
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch

from diagnose.onethread import OneThread, _get_ident
from diagnose.options import check_tracing
from diagnose.report import Config, Event, Frame, Location, Report, ScriptInfo, StepRecord
from diagnose.safetext import strip_escapes
from diagnose.stops import RunStopped
from diagnose.tracer import backward_steps, explain, hooks, modes, ops, replay
from diagnose.tracer.beside import CapturedConfig
from diagnose.tracer.data import BatchIndices
from diagnose.tracer.events import NonFiniteDetected
from diagnose.tracer.frames import frames
from diagnose.tracer.history import StepHistory
from diagnose.tracer.investigate import Scene, investigate
from diagnose.tracer.names import ModuleNames
from diagnose.tracer.roots import RAISED, RootCalls
from diagnose.tracer.sites import Sites
from diagnose.tracer.stats import is_checked, local_tensor, shape_of
from diagnose.tracer.window import (
    MAX_WINDOW,
    Figures,
    NormLayouts,
    Rec,
    Scan,
    Window,
    add_norms,
    carry_other_models,
    input_entries,
    keep_carried,
    output_entries,
    scan,
    scan_clean,
)

_RAISED: Any = RAISED  # marks an always-call hook run after forward raised
# Inside vmap / grad the values are functorch's wrappers, which cannot be read on the host:
# such calls are the transform's business (its own output, outside it, is watched as usual).
_transformed = torch._C._are_functorch_transforms_active
_NORMED = {"pgrad": "parameter gradients", "weights": "weights", "state": "optimizer state"}
_MAX_CONSECUTIVE_SKIPS = 25
_MAX_FAULTS = 5  # distinct things the tracer could not record, kept for the report
_OWN_CONFIG: Any = object()  # the default of ``config``: a capture of the Tracer's own


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
    ``config``: the config capture entered beside the tracer while it is attached, whose
    snapshot is the report's config (``CapturedConfig``); by default one of its own, None for
    none.
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
        config: CapturedConfig | None = _OWN_CONFIG,
    ) -> None:
        check_tracing(
            frames=frames,
            sample_every=sample_every,
            detail_every=detail_every,
            detail_first=detail_first,
        )
        self.frames = frames
        self.backward = backward
        self.sample_every = sample_every
        self.check_at_backward = check_at_backward
        self.detail_every = detail_every
        self.detail_first = detail_first
        self.stop_with = stop_with
        # Called with the step count when a backward pass ends a step of a run without a
        # torch optimizer (what an optimizer step post-hook is for a run with one).
        self.on_stepless_step: Callable[[int], None] | None = None
        self.config = CapturedConfig() if config is _OWN_CONFIG else config
        self.syncs = 0  # host reads so far
        self.step = 0  # optimizer steps completed
        self.event: Event | None = None
        self.event_frames: list[Frame] = []
        self._rows = history if history is not None else StepHistory()  # a row per step
        self._attached: contextlib.ExitStack | None = None  # undoes what attaching did
        self._module_hooks = hooks.ModuleHooks(self)  # a detailed step's watch
        self._root_calls = RootCalls(self.on_pre, self.on_forward)  # a light step's watch
        self._batch = BatchIndices()
        self._names = ModuleNames()
        self._layouts = NormLayouts()
        self._light = False  # this step watches only the root calls
        self._window = Window(light=False)
        self._recent: deque[Rec] = deque(maxlen=frames)  # calls of earlier windows
        self._figures = Figures()  # the step's history figures so far
        self._alert = 0  # detailed steps still owed after a warning sign
        self._replaying = False
        self._active = False  # attached, and not stopped by an event
        self._on = True  # this step is sampled
        self._ncalls = 0
        self._watch: ops.LossWatch | None = None  # the loss watch, while it runs
        self._idle_watch = ops.LossWatch()  # entered again each step: no mode built per step
        self._optimizers: list[Any] = []  # the primary one, once it stepped
        self._primary_opt: int | None = None
        self._optimizers_created = 0  # while attached
        self._known = False  # an optimizer built before attaching was handed over
        self._other_optimizer_stepped = False  # one besides the primary: they take turns
        self._opt_stepped = False
        self._backward_steps = backward_steps.BackwardSteps()  # steps of a loop without optim
        self._sites = Sites()  # the user's lines: root calls, optimizer steps and builds
        self._scaler_active = False
        self._skips = 0  # GradScaler-skipped steps in a row
        self._faults: list[str] = []  # what the tracer could not record, for the report
        self._unchecked = 0  # steps whose check failed inside the tracer
        self.thread = OneThread()  # the thread whose training is watched

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

    @property
    def capture(self) -> Any:
        """The ConfigCapture beside this tracer (a framework hands it what it built), or None."""
        return self.config.capture if self.config is not None else None

    # -- attach / detach -----------------------------------------------------------------

    def __enter__(self) -> Tracer:
        """Attach. A Tracer can be entered again after it exited (e.g. around each epoch):
        it goes on from the step, history, frames and config it had."""
        if self._active:
            raise RuntimeError("this Tracer is already attached")
        stack = contextlib.ExitStack()
        try:
            stack.callback(self._detach_watches)
            if self._light and self._names.roots:
                self._light = False  # the hooks are gone: install what a light step needs
                self._set_light(True)
            else:
                self._light = False
                self._module_hooks.add()
            beside = [self.config] if self.config is not None else []
            hooks.install(stack, self, self._batch, beside)
            self._listen_to_clipping(stack)
            self._active = True
        except BaseException:
            stack.close()
            raise
        self._attached = stack
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
            self._active = False
            attached, self._attached = self._attached, None
            if attached is not None:
                attached.close()

    def _listen_to_clipping(self, stack: contextlib.ExitStack) -> None:
        """Hear the norm each clip by norm measures, from the capture that wraps the clip."""
        clipping = getattr(self.capture, "clipping", None)
        listeners = getattr(clipping, "norm_listeners", None)
        if isinstance(listeners, list) and self.clip_measured not in listeners:
            listeners.append(self.clip_measured)
            stack.callback(listeners.remove, self.clip_measured)

    def clip_measured(self, total_norm: Any) -> None:
        """A clip by norm measured ``total_norm`` (before clipping): the step's gradient norm
        in the history is that one, as a framework's own log shows it, not the clipped norm
        the optimizer is handed."""
        if self._active and self._on and isinstance(total_norm, torch.Tensor) and self._follows():
            if self._stepless():
                # a hand-written update clips after the backward pass that ended its step,
                # whose row already holds the same norm, measured from the gradients then
                return
            window = self._window
            slot = window.slot(total_norm)
            if slot >= 0 and total_norm.dim() == 0:
                entry = ("grad_norm", total_norm.dtype, total_norm.shape, slot)
                window.recs.append(Rec("clipnorm", "backward", self.step, None, [entry]))

    def disarm(self) -> None:
        """Watch nothing more in this process, undoing nothing: a child the script forked
        runs as it would without diagnose (see ``diagnose.forks``)."""
        self.thread.ident = -1  # no thread is the one followed
        self._active = False
        with contextlib.suppress(Exception):
            self._stop_watch()

    def _follows(self) -> bool:
        """Whether the calling thread is the one whose training is watched (see ``diagnose.onethread``)."""
        thread = self.thread
        return thread.ident == _get_ident() or thread.mine()

    def _detach_watches(self) -> None:
        self._active = False
        self._stop_watch()
        self._module_hooks.remove()
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
        self._module_hooks.remove()
        self._root_calls.stop()
        self._light = light
        if not light:
            self._module_hooks.add()
            return
        self._window.light = True
        self._root_calls.watch(self._names.roots)

    # -- module calls --------------------------------------------------------------------

    def on_pre(self, module: torch.nn.Module, args: Any) -> None:
        """Forward pre-hook of every module call (of the roots only, on a light step)."""
        if not self._active or not self._on or not self._follows() or _transformed():
            return
        window = self._window
        if not window.stack and not self._replaying:
            self._stop_watch()
            if module not in self._names:
                if not self._names.roots:
                    window.loss_ops = []  # ops before the model's first call prepared its input
                self._names.add_root(module)
            window.root_rng = replay.rng_state()  # to re-run this forward at an event
            window.root_autocast = replay.autocast_state()
            if window.recs and (
                window.nograd_forward
                or len(window.recs) > MAX_WINDOW
                or (window.backward_seen and self._primary_opt is None)
            ):
                # No optimizer step closed the last window: a manual update, or an
                # evaluation forward that no backward can follow; one read for it now.
                self._check()
                window = self._window
        self._ncalls += 1
        window.stack.append(self._ncalls)

    def on_forward(
        self, module: torch.nn.Module, args: Any, kwargs: Any = None, output: Any = _RAISED
    ) -> None:
        """Forward hook of every module call, also run when forward raised."""
        if not self._active or not self._on or not self._follows() or _transformed():
            return
        stack = self._window.stack
        if not stack:
            return
        call = stack.pop()
        if output is _RAISED:  # torch calls always-call hooks as (module, args, result) when
            return  # forward raised: the call stack is balanced, nothing is recorded
        try:
            if modes.present(self._watch is not None):
                with modes.hidden():
                    self._record_call(module, call, args, kwargs, output)
            else:
                self._record_call(module, call, args, kwargs, output)
        except Exception as exc:  # the tracer must never be what stops the script
            self._fault(f"a call of `{self._names.name(module)}` ({type(module).__name__})", exc)

    def _record_call(
        self, module: torch.nn.Module, call: int, args: Any, kwargs: Any, output: Any
    ) -> None:
        # The hot path: one aminmax per new float tensor, one small record, no host read.
        window = self._window
        stack = window.stack
        outs, out_tensors, hook_on = output_entries(output, window)
        rec = Rec("call", "forward", self.step, module, outs, call)
        if stack:
            rec.parent = stack[-1]
        input_entries(rec.ins, args, kwargs, window.slot)
        rec.args, rec.kwargs = args, kwargs
        window.recs.append(rec)
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
            self._root_done(rec, out_tensors)

    def _root_done(self, rec: Rec, outputs: list[torch.Tensor]) -> None:
        """A root call ended: what a re-run of it needs, and the loss watch until backward."""
        window = self._window
        rec.indices = self._batch.last
        rec.rng, rec.autocast = window.root_rng, window.root_autocast
        rec.grad_enabled = torch.is_grad_enabled()
        if not self._replaying:
            self._sites.root_called(rec.module)
            window.nograd_forward = not rec.grad_enabled
            if self.backward and rec.grad_enabled:  # what a backward event replays from
                replay.keep_output_grads(rec, outputs)
            self._start_watch()

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
            if modes.present():
                with modes.hidden():
                    self._record_grad(module, call, grads[nr])
            else:
                self._record_grad(module, call, grads[nr])
        except Exception as exc:  # raised here, it would fail the script's backward
            name = self._names.name(module)
            self._fault(f"a gradient of `{name}` ({type(module).__name__})", exc)

    def _record_grad(self, module: torch.nn.Module, call: int, grad: Any) -> None:
        if grad is not None and type(grad) is not torch.Tensor:
            grad = local_tensor(grad)  # a DTensor's gradient: its local shard
        if grad is not None and grad.numel() and (grad.is_floating_point() or grad.is_complex()):
            window = self._window
            entry = ("grad_output", grad.dtype, shape_of(grad), window.grad_slot(grad))
            window.recs.append(Rec("grad", "backward", self.step, module, [entry], call))

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
            modes.remove(watch)
        self._window.loss_ops.extend(watch.records)

    def watching_ops(self) -> bool:
        return self._watch is not None

    def before_backward(self, tensors: Any) -> None:
        """``backward()`` was called on ``tensors``: they are the loss."""
        if not self._follows():
            return
        self._stop_watch()
        if not self._active or not self._on:
            return
        window = self._window
        ts = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or ())
        for t in ts:
            if isinstance(t, torch.Tensor) and is_checked(t):
                entry = ("loss", t.dtype, t.shape, window.slot(t))
                rec = Rec("loss", "loss", self.step, None, [entry])
                rec.target = window.loss_sources.get(id(t), t)
                window.recs.append(rec)
        window.backward_seen = True
        window.release_inputs()
        if self._stepless():
            self._backward_steps.before(ts, self._names.roots)
        if self.check_at_backward:
            self._check()

    def _stepless(self) -> bool:
        """No torch optimizer in this run (none made while attached, none stepped): each
        backward pass is a step, as the learning watch counts them too."""
        return self._primary_opt is None and not self._optimizers_created and not self._known

    def after_backward(self) -> None:
        """A backward pass ended. Without a torch optimizer it ends the step: the gradients
        are checked now, with the rest of the window, before a hand-written update uses them."""
        if not self._active or not self._stepless() or not self._follows():
            return
        if self._on:
            params = self._backward_steps.with_grads(self._names.roots)
            if params:
                self._norms("pgrad", "backward", params, [p.grad for p in params])
            self._check()
        self._backward_steps.ended = True
        self._end_step(skipped=False)
        if self.on_stepless_step is not None:
            self.on_stepless_step(self.step)

    # -- mixed precision -----------------------------------------------------------------

    def scaled(self, scaler: Any, outputs: Any, result: Any) -> None:
        """``GradScaler.scale(outputs)`` returned ``result``: backward of it is the loss's."""
        if scaler.is_enabled() and self._follows():
            self._scaler_active = True
            if isinstance(result, torch.Tensor) and isinstance(outputs, torch.Tensor):
                self._window.loss_sources[id(result)] = outputs

    def before_scaler_step(self) -> None:
        if self._follows():
            self._opt_stepped = False

    def after_scaler_step(self, scaler: Any) -> None:
        """A GradScaler step that ran no optimizer step skipped it (inf/nan gradients)."""
        if not self._follows():
            return
        if scaler.is_enabled() and not self._opt_stepped and self._active:
            self._skips += 1
            if self._on:
                self._check()  # the skipped step's one read (no pre-hook ran)
            self._end_step(skipped=True)
        elif self._opt_stepped:
            self._skips = 0

    def scale_updated(self, scaler: Any) -> None:
        scale = getattr(scaler, "_scale", None)
        if self._active and self._on and isinstance(scale, torch.Tensor) and self._follows():
            window = self._window
            entry = ("loss_scale", scale.dtype, scale.shape, window.slot(scale))
            window.recs.append(Rec("scale", "backward", self.step, None, [entry]))

    def optimizer_created(self, optimizer: Any) -> None:
        """Watch ops from the first optimizer's creation until a module runs: in a script with
        no ``nn.Module`` the loss of the very first step is then watched too (a module's
        first call ends the watch and drops what it saw, the preparation of its input)."""
        if not self._follows():
            return
        self._optimizers_created += 1
        self._sites.optimizer_built(optimizer)
        if self._active and self._on and not self._names.roots:
            self._start_watch()

    def optimizer_known(self, optimizer: Any) -> None:
        """An optimizer built before the tracer attached (a framework's), handed over by its
        callback: the run's steps are this optimizer's, not each backward pass."""
        del optimizer
        self._known = True

    # -- optimizer -----------------------------------------------------------------------

    def on_step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        """Optimizer step pre-hook: the step's one check, before the update lands."""
        if not self._follows():
            self.thread.other_step()
            return None
        try:
            if modes.present(self._watch is not None):
                with modes.hidden():
                    return self._step_pre(optimizer, args, kwargs)
            return self._step_pre(optimizer, args, kwargs)
        except Exception as exc:  # the tracer's own failure: the step goes on, unchecked
            if self.event is not None or isinstance(exc, self.stop_with):
                raise
            self._not_checked("the check before an optimizer step", exc)
            return None

    def _step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        self._opt_stepped = True
        if self._primary_opt is None:
            self._primary_opt = id(optimizer)
            self._optimizers.append(optimizer)
        if not self._active:
            return None
        self._stop_watch()
        if not self._on:
            return None
        self._sites.stepped(optimizer)
        lr = optimizer.param_groups[0].get("lr") if optimizer.param_groups else None
        self._figures.lr = lr if isinstance(lr, (int, float)) else None
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
        if not self._backward_steps.ended:  # else its backward just checked these gradients
            self._check_grads(optimizer)
        return None

    def _check_grads(self, optimizer: Any) -> None:
        """The parameter gradients the optimizer is about to use, with the rest of the window,
        in the step's one host read."""
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if params:
            self._norms("pgrad", "backward", params, [p.grad for p in params])
        self._check(stepping=optimizer)

    def _checked_closure(self, closure: Any, optimizer: Any) -> Any:
        """A closure an optimizer re-evaluates inside ``step`` (forward and backward), checked
        after each call, before the optimizer uses the gradients it made."""

        def checked(*args: Any, **kwargs: Any) -> Any:
            loss = closure(*args, **kwargs)
            if self._active and self._on:
                self._figures.grad_norm = None  # the step's norm: its last evaluation's
                self._check_grads(optimizer)
            return loss

        return checked

    def on_step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._active or not self._follows():
            return
        self._sites.step_done(optimizer)
        # Weights and optimizer state are not reduced here: a weight the update made
        # non-finite makes its module's next output non-finite from finite input, and the
        # forward event then finds the weight; the last step's weights are checked when the
        # tracer exits.
        if id(optimizer) != self._primary_opt:
            self._other_optimizer_stepped = True
            return
        if self._backward_steps.ended:
            # An optimizer made before the tracer attached: its first backward was taken
            # for a step of a loop without one, and already ended this step.
            self._backward_steps.ended = False
        else:
            self._end_step(skipped=False)
        if self._on and (
            not self._names.roots or self._optimizers_created > 1 or self._other_optimizer_stepped
        ):
            # No module ever ran: a functional script whose whole step is user ops; or
            # optimizers take turns (a GAN), and what runs now prepares the next one's
            # forward (a generator's output made into the discriminator's input). Watch
            # until a module runs or backward, so a bad value made there names its op.
            self._start_watch()

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
        try:
            add_norms(self._window, self._layouts, (kind, phase, self.step), owners, tensors)
        except Exception as exc:  # these values go unchecked; the script goes on
            what = _NORMED.get(kind, kind)
            if kind == "pgrad":  # the step's gradients: the step is not checked
                self._not_checked(f"the norms of the {what}", exc)
            else:
                self._fault(f"the norms of the {what}", exc)

    def _end_step(self, skipped: bool) -> None:
        f, self._figures = self._figures, Figures()
        self._rows.append(
            (
                self.step,
                f.loss,
                f.clip_norm if f.clip_norm is not None else f.grad_norm,
                None if self._light else f.max_activation,  # a light step watches roots only
                f.lr,
                f.loss_scale,
                skipped,
                f.near_limit,
                not self._light,
                f.max_output,
            )
        )
        if not skipped:
            self.step += 1
        self._on = self.step % self.sample_every == 0
        if f.near_limit or skipped:
            self._alert = self.detail_every  # watch closely while values are near trouble
        elif self._alert:
            self._alert -= 1
        if self._active and self._names.roots:
            self._set_light(not self._detailed_step())
        self._scaler_active = False
        if self._skips >= _MAX_CONSECUTIVE_SKIPS and self.event is None:
            self._raise(explain.skips_event(self.step, self._skips, f.loss_scale), None)

    # -- the check -----------------------------------------------------------------------

    def _check(self, stepping: Any = None) -> None:
        """Read the whole window back in one transfer and look for the first non-finite.

        ``stepping``: the optimizer whose step this check precedes. With optimizers taking
        turns, the root calls of the models it does not train go on into the next window
        (``carry_other_models``). A failure of the tracer's own here never reaches the
        script: the step is counted as not checked, and the report says why.
        """
        try:
            if modes.present(self._watch is not None):
                with modes.hidden():
                    self._check_window(stepping)
            else:
                self._check_window(stepping)
        except Exception as exc:
            if self.event is not None or isinstance(exc, self.stop_with):
                raise
            self._not_checked("the check of a step", exc)

    def _not_checked(self, what: str, exc: Exception) -> None:
        self._unchecked += 1
        self._fault(what, exc)
        self._window = self._window.successor(self._light)  # what it held is let go

    def _check_window(self, stepping: Any) -> None:
        self._stop_watch()
        window = self._window
        self._window = window.successor(self._light)
        if window.empty():
            self._release(window.carried)
            return
        host, offsets = window.read()
        self.syncs += 1
        if math.isfinite(sum(host)):  # nan and inf survive a sum: nothing to look into
            carried = []  # taken before scan_clean releases the inputs of the calls it keeps
            if stepping is not None and (
                self._optimizers_created > 1 or self._other_optimizer_stepped
            ):
                own = {id(p) for g in stepping.param_groups for p in g["params"]}
                carried = carry_other_models(window.recs, own)
            calls, collapsed = scan_clean(window.recs, host, offsets, self._figures, self.frames)
            self._release(window.carried)
            if collapsed is not None:
                found = Scan(window.recs, collapsed, {}, [])  # frames: the earlier windows'
                self._raise(*investigate(self._scene(), found, False))
            self._window.carried = keep_carried(carried, host)
            self._recent.extend(calls)
            return
        recs = [*window.carried, *window.recs]
        first_bad, calls = scan(window.recs, host, offsets, self._figures, self._scaler_active)
        calls = {**{r.call: r for r in window.carried}, **calls}
        try:
            if first_bad is not None:
                window_calls = [r for r in recs if r.kind == "call"]
                found = Scan(recs, first_bad, calls, window_calls, window.loss_ops)
                self._raise(*investigate(self._scene(), found, window.light))
            self._recent.extend(r for r in window.recs if r.kind == "call")
        finally:
            self._release(recs)

    @staticmethod
    def _release(recs: list[Rec]) -> None:
        for rec in recs:  # drop references to activations; keep host values
            rec.release()

    def _scene(self) -> Scene:
        return Scene(
            names=self._names,
            optimizers=self._optimizers,
            recent=self._recent,
            batch=self._batch,
            paused=self._paused,
            record=self._recording_into,
            layouts=self._layouts,
            step=self.step,
            backward=self.backward,
            frames=self.frames,
            ncalls=self._ncalls,
            sites=self._sites,
        )

    @contextlib.contextmanager
    def _paused(self) -> Iterator[None]:
        """Record nothing meanwhile (a re-run made to explain an event)."""
        was, self._active = self._active, False
        try:
            yield
        finally:
            self._active = was

    @contextlib.contextmanager
    def _recording_into(self, window: Window) -> Iterator[Window]:
        """Record every module call into ``window`` meanwhile (a light step's replay). The
        global hooks stay on after it: the run stops at this event."""
        self._set_light(False)
        saved, self._window = self._window, window
        self._replaying = True
        try:
            yield window
        finally:
            self._replaying = False
            self._window = saved

    def _raise(self, event: Event, found: list[Frame] | None) -> None:
        self.event = event
        self.event_frames = found if found is not None else self._frames()
        self._active = False
        self._stop_watch()
        raise self.stop_with(event, self.event_frames, list(self.history))

    def _frames(self) -> list[Frame]:
        return frames(list(self._recent), None, self.frames, self._names.name, self.step)

    def report(self) -> Report:
        """The run so far as a Report (no symptoms or fixes: the engine adds those)."""
        return Report(
            status="nonfinite" if self.event is not None else "clean",
            script=ScriptInfo(path=sys.argv[0] if sys.argv else "<python>", argv=sys.argv[1:]),
            event=self.event,
            frames=self.event_frames if self.event is not None else self._frames(),
            history=list(self.history),
            config=self.config.config(self._names.roots) if self.config is not None else Config(),
            warnings=[*self._faults, *filter(None, [self.thread.note()])],
            history_note=self._rows.note(),
            unwatched_steps=self.unwatched_steps or None,
        )

    @property
    def unwatched_steps(self) -> int:
        """Optimizer steps not checked: those of other threads, and those whose check failed
        inside the tracer."""
        return self._unchecked + sum(n for _, n in self.thread.others.values())


def _distributed() -> bool:
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


__all__ = ["Location", "NonFiniteDetected", "Tracer"]
