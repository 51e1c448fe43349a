"""From a window's first non-finite record to the event and its frames.

Runs once per run, at the event: gathers what ``explain`` needs (the module names, the
weights' statistics, the op a replay names, the dataset rows of a bad batch) by re-running
parts of the model through ``replay``, and hands it to ``explain``, which writes the event.
A light step's event first replays the step with every module watched, so it names what a
detailed step would.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from diagnose.report import CallFrame, CrossCheck, Event, Frame, Location
from diagnose.tracer import backward, crosscheck, explain, ops, replay
from diagnose.tracer.data import BatchIndices, CastOverflow
from diagnose.tracer.explain import BackwardOp, Explained
from diagnose.tracer.frames import frames, op_frame
from diagnose.tracer.names import ModuleNames
from diagnose.tracer.sites import Sites
from diagnose.tracer.stats import full_stats, iter_tensors
from diagnose.tracer.window import NormLayouts, Rec, Scan

# What a light step's replay can explain: values of the model's forward, the loss, gradients.
# (Weights and optimizer state after a step, and the loss scale, are seen as on a detailed step.)
_REPLAYABLE = ("call", "loss", "grad", "pgrad")
_LOSS_OPS_CHECKED = 32  # the latest loss-phase ops whose inputs a cast may have made inf


@dataclass
class Scene:
    """What the tracer knows beyond the window: an investigation reads it, never changes it."""

    names: ModuleNames
    optimizers: list[Any]
    recent: Iterable[Rec]  # calls of earlier windows, oldest first
    batch: BatchIndices
    paused: replay.Paused  # the tracer records nothing while entered
    record: replay.Recorder  # the tracer records into a given window while entered
    layouts: NormLayouts
    step: int
    backward: bool
    frames: int
    ncalls: int
    sites: Sites


def investigate(scene: Scene, scan: Scan, light: bool) -> tuple[Event, list[Frame]]:
    """The event of a scanned window, and the frames before it."""
    loss_ops = ops.as_records(scan.loss_ops)
    ops.learn_finiteness(loss_ops)
    case = _Investigation(scene, scan.window_calls, loss_ops)
    first = scan.first_bad
    with replay.state_kept(scene.names.roots):  # the explanation re-runs parts of the model
        if (
            light
            and first.kind in _REPLAYABLE
            and not (first.kind == "call" and first.inputs_bad())
        ):
            return case.light(first, scan.recs, scan.calls)
        return case.event(first, scan.recs, scan.calls)


class _Investigation:
    def __init__(self, scene: Scene, window_calls: list[Rec], loss_ops: list[ops.OpRecord]):
        self.scene = scene
        self.name = scene.names.name
        self.window_calls = window_calls  # the calls of the window the event is read from
        self.loss_ops = loss_ops

    def frames(self, producer: Rec | None, upto: bool = True) -> list[Frame]:
        recs = [*self.scene.recent, *self.window_calls]
        return frames(recs, producer, self.scene.frames, self.name, self.scene.step, upto)

    def last_call(self, module: str | None) -> Rec | None:
        """The latest call of the module an event names, this window's before earlier ones."""
        recs = [*self.scene.recent, *self.window_calls]
        return next((r for r in reversed(recs) if module and self.name(r.module) == module), None)

    def event(
        self, rec: Rec, recs: list[Rec], calls: dict[int, Rec], note: str | None = None
    ) -> tuple[Event, list[Frame]]:
        explained = self.explain(rec, recs, calls, note)
        self.locate(explained.event, rec, calls)
        # A value of the backward or the update came after every forward call of its step, so
        # its frames keep the calls after the module it names.
        upto = explained.event.phase in ("input", "forward", "loss")
        found = self.frames(explained.producer, upto)
        finding = explained.finding
        if finding is not None and explained.producer is None and explained.event.module is None:
            # Born in an op outside any module: its own row ends the frames table.
            found = [
                *found[len(found) + 1 - self.scene.frames :],
                op_frame(self.scene.ncalls + 1, rec.step, finding),
            ]
        return explained.event, found

    def locate(self, event: Event, rec: Rec, calls: dict[int, Rec]) -> None:
        """Put the user's line on an event born off it: an optimizer-phase value at the
        ``step()`` call (and the line that built that optimizer), a value born inside a
        module or library code at the user's call of the root module that led there."""
        sites = self.scene.sites
        if event.phase == "optimizer":
            optimizer = self.optimizer_for(event)
            if optimizer is not None:
                event.location = ops.site_location(sites.step(optimizer)) or event.location
                event.optimizer_location = ops.site_location(sites.built(optimizer))
            return
        root = self.root_module(event, rec, calls)
        if root is not None:
            event.location = ops.with_user_line(event.location, sites.root(root))

    def root_module(self, event: Event, rec: Rec, calls: dict[int, Rec]) -> Any:
        """The root module whose call led to the event's value, if a module call did."""
        if rec.kind == "call":
            return replay.root_of(rec, calls).module
        named = next(
            (r for r in reversed(calls.values()) if self.name(r.module) == event.module), None
        )
        if named is not None:
            return replay.root_of(named, calls).module
        for root in self.scene.names.roots if event.module else ():
            if any(self.name(m) == event.module for m in root.modules()):
                return root  # a module whose call ran in an earlier window (a GAN's G)
        roots = [r for r in calls.values() if r.parent < 0]
        return roots[-1].module if roots and rec.kind in ("grad", "pgrad") else None

    def own_step(self, rec: Rec, param: Any) -> Any:
        """The optimizer holding ``param``; where several take turns (a GAN's D and G), the
        record's step becomes that optimizer's own count."""
        sites = self.scene.sites
        stepped = [*self.scene.optimizers, *sites.optimizers()]
        holder = next(
            (o for o in stepped if any(p is param for g in o.param_groups for p in g["params"])),
            stepped[0] if stepped else None,
        )
        if holder is not None and len(sites.optimizers()) > 1:
            rec.step = sites.steps(holder) + (1 if rec.kind == "call" else 0)
        return holder

    def optimizer_for(self, event: Event) -> Any:
        """The optimizer whose update the event followed: the one holding its module's
        parameters, else the first that stepped."""
        stepped = [*self.scene.optimizers, *self.scene.sites.optimizers()]
        owners = self.scene.names.param_owners()
        held = {key for key, (name, _, _) in owners.items() if name == event.module}
        for optimizer in stepped if held else ():
            if any(id(p) in held for g in optimizer.param_groups for p in g["params"]):
                return optimizer
        return stepped[0] if stepped else None

    def explain(
        self, rec: Rec, recs: list[Rec], calls: dict[int, Rec], note: str | None
    ) -> Explained:
        kind = rec.kind
        if kind == "call":
            return self.forward(rec, calls, note)
        if kind == "loss":
            finding = ops.find_producer(self.loss_ops, rec.target) if self.loss_ops else None
            cast = self.cast_into_loss() if self.loss_ops else None
            return Explained(explain.loss_event(rec, finding, note, cast), None, finding)
        if kind == "grad":
            maker = explain.grad_maker(rec, recs)
            found = self.backward_op(rec, recs, calls, self.name(maker))
            event = explain.grad_event(rec, maker, self.name, found, note)
            return Explained(event, self.last_call(event.module), found.finding if found else None)
        if kind == "scale":
            return Explained(explain.scale_event(rec, note))
        return self.parameter(rec, recs, calls, note)

    def forward(self, rec: Rec, calls: dict[int, Rec], note: str | None) -> Explained:
        root = replay.root_of(rec, calls)
        if rec.inputs_bad() and (root is rec or root.inputs_bad()):
            if isinstance(root.module, torch.nn.modules.loss._Loss):
                return self.loss_input(root)
            name, t, at = self.bad_input(root)
            cast = self.scene.batch.cast_overflow(t, at) if t is not None else None
            indices = cast.indices if cast is not None else self.rows(root, t, at)
            event = explain.input_event(root, self.name(root.module), indices, cast, name)
            return Explained(event, root)
        producer = explain.forward_producer(rec, calls)
        module = producer.module
        weights = [full_stats(n, p) for n, p in module.named_parameters(recurse=False)]
        bad_weights = [w for w in weights if not w.finite]
        if bad_weights and self.scene.step > 0:
            return Explained(self.weight(rec, producer, bad_weights[0]), producer)
        frames: list[CallFrame] = []
        finding = replay.replay_call(producer, calls, self.scene.paused, frames)
        if finding is not None:
            finding.call_chain = self.chain(root, frames, finding.location)
        wmax = max((w.abs_max for w in weights if w.abs_max is not None), default=None)
        event = explain.forward_event(rec, producer, self.name, wmax, finding, note)
        return Explained(event, producer, finding)

    def chain(
        self, root: Rec, frames: list[CallFrame], at: Location | None
    ) -> list[CallFrame] | None:
        """The user's frames from the loop's call of ``root`` down to the op's line ``at``:
        the root's call site, the frames at the producing module's call, the op's line."""
        site = self.scene.sites.root(root.module)
        chain = []
        if site is not None and ops.is_user_site(site):
            chain.append(CallFrame(file=site[0], line=site[1], function=site[2]))
        chain.extend(frames)
        if at is not None and not ops.lacks_user_line(at):
            last = chain[-1] if chain else None
            if last is None or (last.file, last.line) != (at.file, at.line):
                chain.append(CallFrame(file=at.file, line=at.line, function=at.function))
        return chain or None

    def loss_input(self, root: Rec) -> Explained:
        """A loss module given a non-finite value: it was made between the model and the
        loss (a ``log`` of probabilities, a mask), by an op the loss watch saw, not in the
        batch."""
        named = [(n, t) for n, t in iter_tensors(root.args, "input") if not _finite(t)]
        bad = [t for _, t in named]
        finding = ops.find_producer(self.loss_ops, bad[0]) if bad and self.loss_ops else None
        cast = self.cast_into_loss(named)
        return Explained(explain.loss_event(root, finding, cast=cast), root, finding)

    def cast_into_loss(
        self, tensors: Iterable[tuple[str, torch.Tensor]] | None = None
    ) -> tuple[str, CastOverflow] | None:
        """A non-finite input of a loss (``tensors``, else the latest loss ops' inputs) that
        the loader gave finite and a cast made inf (``BatchIndices.cast_overflow``)."""
        if tensors is None:
            recent = self.loss_ops[-_LOSS_OPS_CHECKED:]
            tensors = [(f"input[{i}]", t) for r in recent for i, (_, t) in enumerate(r.inputs)]
        for name, t in tensors:
            if not isinstance(t, torch.Tensor) or t.dim() == 0 or not t.is_floating_point():
                continue
            if not self.scene.batch.holds_shape_of(t):
                continue  # not the shape of anything the loader gave: its values are not read
            at = _bad_rows(t)
            cast = self.scene.batch.cast_overflow(t, at) if at else None
            if cast is not None:
                return name, cast
        return None

    def weight(self, rec: Rec, producer: Rec, weight: Any) -> Event:
        param = getattr(producer.module, weight.name, None)
        optimizer = self.own_step(rec, param)
        states = []
        if optimizer is not None and param is not None:
            states = [
                full_stats(key, value)
                for key, value in optimizer.state.get(param, {}).items()
                if isinstance(value, torch.Tensor) and value.dim()
            ]
        return explain.weight_event(rec, producer, self.name, weight, optimizer, states)

    def parameter(
        self, rec: Rec, recs: list[Rec], calls: dict[int, Rec], note: str | None
    ) -> Explained:
        owners = self.scene.names.param_owners()
        last_call = {id(r.module): r.call for r in self.window_calls}
        index = explain.bad_parameter(rec, owners, last_call)
        target = rec.target[index]
        owner = owners.get(id(target[0] if isinstance(target, tuple) else target))
        owner = owner or (None, None, None)
        found = self.backward_op(rec, recs, calls, owner[0]) if rec.kind == "pgrad" else None
        optimizer = self.own_step(rec, target[0] if isinstance(target, tuple) else target)
        event = explain.param_event(rec, index, owner, optimizer, found, note)
        return Explained(event, self.last_call(event.module), found.finding if found else None)

    def backward_op(
        self, rec: Rec, recs: list[Rec], calls: dict[int, Rec], module: str | None
    ) -> BackwardOp | None:
        """Name the op whose gradient was born non-finite: first among the ops recorded
        outside modules (on the graph path to the bad parameters), else inside ``module``'s
        last call, replayed with grad on, else inside its parents."""
        loss = next((r.target for r in reversed(recs) if r.kind == "loss"), None)
        params = None
        if rec.kind == "pgrad":
            params = [
                rec.target[i]
                for i, (lo, hi) in enumerate(rec.values or ())
                if not (math.isfinite(lo) and math.isfinite(hi))
            ]
        paused = self.scene.paused
        try:
            with paused():
                finding = backward.find_backward_producer(self.loss_ops, loss, params)
            if finding is not None:
                return BackwardOp(finding)  # born outside the model: no model replay sees it
            call = next(
                (r for r in reversed(list(calls.values())) if self.name(r.module) == module), None
            )
            found = replay.replay_module_backward(call, calls, paused)
        except Exception:
            found = None
        first = None
        if found is not None:
            finding, where = found
            first = BackwardOp(finding, (self.name(where.module), type(where.module).__name__))
        return self.confirm_backward(first, calls, params)

    def confirm_backward(
        self, first: BackwardOp | None, calls: dict[int, Rec], params: list[Any] | None
    ) -> BackwardOp | None:
        """The first method's producer checked by a replay of the step's backward under
        anomaly mode (``crosscheck``); the replay's producer where it found one."""
        if replay.multi_process():
            return first  # a replay of the step's backward would all-reduce on one rank
        roots = [r for r in calls.values() if r.parent < 0 and r.grads and r.args is not None]
        if params:
            held = {id(p) for p in params}
            roots = [r for r in roots if any(id(p) in held for p in r.module.parameters())] or roots
        birth = None
        if roots:
            with self.scene.paused():
                birth = crosscheck.backward_birth(roots, partial(replay.rerun, grad=True))
        said = _described(first)
        if birth is None or birth.op is None:
            if first is not None and roots:
                first.finding.cross_check = CrossCheck(
                    method=crosscheck.METHOD,
                    agreed=None,
                    detail="the step's backward replayed under anomaly mode with its own incoming "
                    "gradients stayed finite: the producer is the first method's, unconfirmed",
                )
            return first
        module = birth.op.module
        root = next((r for r in roots if any(m is module for m in r.module.modules())), roots[0])
        finding = crosscheck.finding(birth, self.scene.sites.root(root.module))
        if finding is None:
            return first
        confirmed = birth.describe(self.name)
        agreed = said is not None and said == _described_birth(birth, self.name)
        detail = (
            "the step's backward replayed with its own incoming gradients under anomaly mode "
            f"(check_nan) and a hook on every autograd node: {confirmed} made the first "
            "non-finite gradient"
        )
        if birth.kind == "nan" and birth.anomaly not in (None, birth.node):
            detail += f" (anomaly mode stopped at {birth.anomaly})"
        if not agreed:
            detail += (
                f"; re-running each op alone with an incoming gradient of ones had named {said}"
                if said
                else "; re-running each op alone with an incoming gradient of ones named no op"
            )
        finding.cross_check = CrossCheck(
            method=crosscheck.METHOD, agreed=agreed, first=None if agreed else said, detail=detail
        )
        owner = (self.name(module), type(module).__name__) if module is not None else None
        return BackwardOp(finding, owner)

    def bad_input(self, root: Rec) -> tuple[str, torch.Tensor | None, list[int]]:
        """A root's first non-finite input: its name, the tensor (None for one whose rows
        are not the batch's: a sharded tensor) and the positions of its non-finite rows."""
        bad = next(
            (
                n
                for (n, *_), (lo, hi) in zip(root.ins, root.invalues, strict=True)
                if not (math.isfinite(lo) and math.isfinite(hi))
            ),
            "input",
        )
        tensors = dict(iter_tensors(root.args, "input"))
        if root.kwargs:
            tensors.update({k[7:]: v for k, v in iter_tensors(root.kwargs, "kwargs")})
        t = tensors.get(bad)
        if t is None or t.dim() == 0 or type(t) not in (torch.Tensor, torch.nn.Parameter):
            return bad, None, []
        return bad, t, _bad_rows(t)

    def rows(self, root: Rec, t: torch.Tensor | None, at: list[int]) -> list[int]:
        """The dataset indices of rows ``at`` of a root's non-finite input ``t``."""
        if t is None:
            return []
        found = self.scene.batch.lookup(t, at)  # the batch this tensor came from
        if found is not None:
            return found
        if root.indices is not None and len(root.indices) == t.shape[0]:
            return [root.indices[i] for i in at]
        return []

    def light(
        self, first_bad: Rec, recs: list[Rec], calls: dict[int, Rec]
    ) -> tuple[Event, list[Frame]]:
        """An event on a light step: replay its root calls with every module watched.

        The weights are those the step used (the update has not landed), so the replay,
        from the same inputs and RNG state, makes the same values. For a non-finite forward
        value its first non-finite module output is the producer a detailed step would have
        named; for a gradient, the replay also runs the model's backward from the gradients
        the step's root outputs received, so each module's gradient is seen as on a detailed
        step. When the replay does not reproduce the value, the event is built from what the
        light checks saw, and says so.
        """
        backward_too = first_bad.kind in ("pgrad", "grad") and self.scene.backward
        targets = (first_bad.target or ()) if first_bad.kind == "pgrad" else ()
        holding = frozenset(id(t[0] if isinstance(t, tuple) else t) for t in targets)
        replayed = replay.replay_window(
            recs, backward_too, self.scene.record, self.scene.layouts, holding
        )
        if replayed is not None:
            rrecs, rcalls, rbad = replayed
            self.window_calls = [r for r in rrecs if r.kind == "call"]
            if rbad is not None:
                return self.event(rbad, rrecs, rcalls)
            calls = rcalls  # a backward explanation walks the modules the replay saw
        if first_bad.kind in ("loss", "scale"):
            return self.event(first_bad, recs, calls)  # the light checks name these
        what = "forward and backward" if backward_too else "forward"
        note = explain.light_note(what, reproduced=replayed is not None)
        if first_bad.kind != "call":
            return self.event(first_bad, recs, calls, note)
        return explain.unknown_submodule_event(first_bad, self.name, note), self.frames(first_bad)


def _bad_rows(t: torch.Tensor) -> list[int]:
    """Positions along dim 0 of ``t``'s rows that hold a nan or an inf."""
    if t.numel() == 0:
        return []
    with torch.no_grad():
        return (
            (~torch.isfinite(t.detach()))
            .reshape(t.shape[0], -1)
            .any(1)
            .nonzero()
            .flatten()
            .tolist()
        )


def _finite(t: torch.Tensor) -> bool:
    with torch.no_grad():
        return not (t.is_floating_point() or t.is_complex()) or bool(torch.isfinite(t).all())


def _described(found: BackwardOp | None) -> str | None:
    """The first method's producer as the cross-check compares it: module and op."""
    if found is None:
        return None
    module = found.module[0] if found.module is not None else None
    return f"`{module}` op `{found.finding.op}`" if module else f"op `{found.finding.op}`"


def _described_birth(birth: crosscheck.Birth, name: Any) -> str | None:
    if birth.op is None:
        return None
    module = birth.module_name(name)
    op = birth.op.record.name
    return f"`{module}` op `{op}`" if module else f"op `{op}`"
