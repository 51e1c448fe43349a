"""The producer of a backward event, confirmed by a second method on a replay of the step.

The first method (``backward``) re-runs each recorded op alone with an incoming gradient of
ones. That misses a gradient that goes non-finite only at the step's own magnitudes: a
LayerNorm's backward fed a huge gradient, whose products overflow and meet as inf - inf. So at
a backward event the step's root forward is re-run once more (same inputs, RNG state,
autocast regions and weights: the update has not landed) under anomaly mode, every op
recorded with the module it ran in and the user's frames that led to it, and differentiated
with the gradients the step's root outputs received. A hook on every autograd node names the
first node whose gradients come out non-finite from finite incoming ones; anomaly mode's own
check (``check_nan``) must name the same node for a nan. That node's op is the producer: its
module through any module type, its line inside the user's ``forward``, and the user's frames
from the training loop's call down to it.

Runs only at an event: nothing here touches a healthy step.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from diagnose.report import CallFrame, Location
from diagnose.tracer import ops
from diagnose.tracer.backward import downstream_only, outputs_with_grads
from diagnose.tracer.stats import is_checked, iter_tensors

_MAX_NODES = 200_000  # graph walk bound, as in ``backward``
_MAX_OPS = 100_000  # ops recorded in one replay: a huge model's replay stays bounded
_NEAR = 4  # next_functions hops from a recorded op's node to an internal node it made
METHOD = "anomaly-mode replay"
# torch's anomaly-mode message for a node that returned nan: its class name
_ANOMALY = re.compile(r"Function '(\w{1,200})' returned nan values")


@dataclass
class _Op:
    """One op of the replay: what it was, where it ran, and what made its gradient node."""

    record: ops.OpRecord
    module: torch.nn.Module | None
    frames: list[CallFrame]  # the user's frames inside the replay, outermost first
    via: str | None  # the innermost library line on the way there


@dataclass
class Birth:
    """The autograd node whose gradient was born non-finite in the replay, and its op."""

    node: str
    kind: str  # "nan" or "inf"
    op: _Op | None
    anomaly: str | None  # the node anomaly mode named (None: it raised nothing, e.g. an inf)

    def module_name(self, name: Callable[[Any], str | None]) -> str | None:
        return name(self.op.module) if self.op is not None and self.op.module is not None else None

    def describe(self, name: Callable[[Any], str | None]) -> str:
        where = self.module_name(name)
        op = self.op.record.name if self.op is not None else "?"
        return f"`{where}` op `{op}` ({self.node})" if where else f"op `{op}` ({self.node})"


class _Recorder(TorchFunctionMode):
    """Each op whose output has a gradient node: the node, the op, its module, its frames."""

    def __init__(self, modules: list[torch.nn.Module]) -> None:
        super().__init__()
        self.modules = modules  # the stack of module calls open now
        self.by_node: dict[int, tuple[Any, _Op]] = {}  # holding the node keeps its id its own
        self.order: list[tuple[Any, _Op]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **kwargs) if kwargs else func(*args)
        name = getattr(func, "__name__", "")
        if name in ops._IGNORED or len(self.order) >= _MAX_OPS:
            return out
        for _, t in iter_tensors(out, "o"):
            node = t.grad_fn
            if node is None or id(node) in self.by_node:
                continue
            frames, via = user_frames()
            rec = ops.OpRecord(
                ops._DUNDER.get(name, name) or str(func),
                None,
                t,
                func=func,
                args=args,
                kwargs=kwargs or {},
            )
            op = _Op(rec, self.modules[-1] if self.modules else None, frames, via)
            self.by_node[id(node)] = (node, op)
            self.order.append((node, op))
        return out


def _entered(modules: list[torch.nn.Module], module: torch.nn.Module, args: Any) -> None:
    modules.append(module)


def _left(modules: list[torch.nn.Module], module: torch.nn.Module, args: Any, out: Any) -> None:
    if modules:  # returns None: a forward hook's value would replace the output
        modules.pop()


def user_frames() -> tuple[list[CallFrame], str | None]:
    """The user's frames from here out to diagnose's replay call, outermost first, and the
    innermost library (or torch.nn) line on the way."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(ops._DIAGNOSE_DIR):
        frame = frame.f_back
    found: list[CallFrame] = []
    via: str | None = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(ops._DIAGNOSE_DIR):
            break
        library = filename.startswith(ops.SKIP_PREFIXES) or ops._is_library(filename)
        if not library:
            found.append(
                CallFrame(file=filename, line=frame.f_lineno, function=frame.f_code.co_name)
            )
        elif via is None and not found and _via_candidate(filename):
            via = f"{ops.library_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return found[::-1], via


def _via_candidate(filename: str) -> bool:
    """torch's modules and functional code, or an installed library's (not torch's own
    dispatch, such as the function mode that records the op)."""
    if filename.startswith(ops._TORCH_DIR):
        return filename.startswith(ops._TORCH_NN)
    return ops._is_library(filename)


@dataclass
class _Seen:
    first: tuple[Any, str] | None = None  # (node, "nan"/"inf")
    nodes: list[Any] = field(default_factory=list)


def _check_node(seen: _Seen, node: Any, grad_inputs: Any, grad_outputs: Any) -> None:
    """Node post-hook: gradients non-finite out of finite incoming ones (the first wins)."""
    if seen.first is not None:
        return
    incoming = [g for g in grad_outputs if isinstance(g, torch.Tensor)]
    made = [g for g in grad_inputs if isinstance(g, torch.Tensor)]
    if not made or not all(_finite(g) for g in incoming):
        return
    bad = [g for g in made if not _finite(g)]
    if bad:
        nan = any(bool(torch.isnan(g).any()) for g in bad)
        seen.first = (node, "nan" if nan else "inf")


def _finite(t: torch.Tensor) -> bool:
    if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return True
    return bool(torch.isfinite(t).all())


def _hook_graph(outputs: list[torch.Tensor], seen: _Seen) -> bool:
    """A post-hook on every node reachable from ``outputs``; False for a graph too large."""
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        if len(visited) > _MAX_NODES:
            return False
        visited.add(id(node))
        seen.nodes.append(node)  # held: the ids stay theirs while the walk runs
        node.register_hook(partial(_check_node, seen, node))
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return True


def _op_of(node: Any, recorder: _Recorder) -> _Op | None:
    """The recorded op that made ``node``: its output's node, or, for a node made inside an
    op (a weight's transpose inside ``linear``), the nearest recorded node above it."""
    if id(node) in recorder.by_node:
        return recorder.by_node[id(node)][1]
    best: tuple[int, _Op] | None = None
    for top, op in recorder.order:
        frontier, depth = [top], 0
        while frontier and depth < _NEAR and (best is None or depth < best[0]):
            depth += 1
            # through the nodes no recorded op made (an op's insides), to ``node``
            frontier = [
                n
                for f in frontier
                for n, _ in f.next_functions
                if n is node or (n is not None and id(n) not in recorder.by_node)
            ]
            if any(n is node for n in frontier):
                best = (depth, op)
                break
    return best[1] if best is not None else None


def backward_birth(
    roots: list[Any],
    rerun: Callable[[Any], Any],
) -> Birth | None:
    """Replay the roots' forward under anomaly mode and their backward from the gradients
    their outputs received in the step; the node whose gradient was born non-finite there.

    ``roots``: the step's root calls (``Rec``), each with its kept output gradients;
    ``rerun``: calls a root again on its recorded inputs, RNG state and autocast regions, with
    grad on (the caller keeps the tracer quiet and the models' state as it was).
    None when the replay cannot run or its backward stays finite.
    """
    roots = [r for r in roots if r.grads and r.args is not None]
    if not roots:
        return None
    modules: list[torch.nn.Module] = []
    recorder = _Recorder(modules)
    seen = _Seen()
    anomaly: str | None = None
    mod = torch.nn.modules.module
    pre = mod.register_module_forward_pre_hook(partial(_entered, modules))
    post = mod.register_module_forward_hook(partial(_left, modules), always_call=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # anomaly mode's own warnings
            with torch.autograd.detect_anomaly(check_nan=True):
                with recorder:
                    outputs = [rerun(root) for root in roots]
                outs, grads = _differentiable(roots, outputs)
                params = list(
                    {
                        id(p): p
                        for root in roots
                        for p in root.module.parameters()
                        if p.requires_grad
                    }.values()
                )
                if not outs or not params or not _hook_graph(outs, seen):
                    return None
                try:
                    torch.autograd.grad(outs, params, grads, allow_unused=True)
                except RuntimeError as exc:
                    named = _ANOMALY.search(str(exc))
                    if named is None:
                        return None
                    anomaly = named.group(1)
    except Exception:
        return None
    finally:
        pre.remove()
        post.remove()
    if seen.first is None:
        return None
    node, kind = seen.first
    return Birth(node.name(), kind, _op_of(node, recorder), anomaly)


def _differentiable(
    roots: list[Any], outputs: list[Any]
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The replayed root outputs paired with the finite gradients the step's outputs got."""
    outs, grads = [], []
    for t, grad in outputs_with_grads(roots, outputs):
        if not is_checked(t):
            continue
        if not _finite(grad):
            return [], []  # the gradient came in non-finite: not born in the model
        outs.append(t)
        grads.append(grad)
    keep = downstream_only(outs)
    return [outs[i] for i in keep], [grads[i] for i in keep]


def finding(birth: Birth, root_site: ops.Site | None) -> ops.OpFinding | None:
    """The birth as an op finding: its op's inputs, its line inside the user's code (the
    frame of the module's ``forward`` where the op ran) and the call chain from the loop."""
    op = birth.op
    if op is None:
        return None
    found = ops.finding_of(
        op.record, gradient=(birth.node, birth.kind), incoming="the step's own incoming gradient"
    )
    chain = list(op.frames)
    if root_site is not None and ops.is_user_site(root_site):
        file, line, function, _ = root_site
        chain.insert(0, CallFrame(file=file, line=line, function=function))
    if op.frames:
        inner = op.frames[-1]
        found.location = Location(
            file=inner.file, line=inner.line, function=inner.function, via=op.via
        )
    found.call_chain = chain or None
    return found
