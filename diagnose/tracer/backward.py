"""Which op's *gradient* was born non-finite: the backward half of producer finding.

A value can be finite all through the forward pass and still make the backward non-finite:
sqrt at 0 (its derivative 1/(2 sqrt(x)) is inf, times a zero incoming gradient is nan), the
norm of a zero vector, ``x ** 0.5`` at 0, ``acos``/``asin`` at +-1, ``atan2(0, 0)``, a division
by a tiny number whose gradient ``-a/b**2`` overflows. By the time the tracer sees the
non-finite gradient (at the optimizer step) autograd has freed what the backward used, but the
forward ops recorded by the op watch still hold their inputs. Each op on the graph path from
the loss to the parameters with the bad gradient is re-run alone on copies of its inputs and
differentiated with a finite incoming gradient; the first one backward would meet (the latest
in forward order) whose input gradients come out non-finite is the producer, and its recorded
call site is the user's line that created the autograd node.

An op may also make inf from finite inputs that a later op discards (``torch.where(mask,
log(p), 0)`` at p = 0, ``tanh`` of an overflowed ``exp``): the loss stays finite, but the
gradient that reaches the discarded positions is 0, and 0 times the op's infinite derivative
is nan. Such an op is re-run with an incoming gradient of 0 where its output is not finite.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._pytree import tree_map

from diagnose.tracer.ops import OpFinding, OpRecord, Replay, finding_of
from diagnose.tracer.stats import is_checked, iter_tensors

_MAX_NODES = 200_000  # graph walk bound: a pathological graph must not stall the report


def nodes_on_path(
    loss: torch.Tensor | None, params: Iterable[torch.Tensor] | None
) -> dict[int, Any] | None:
    """The autograd nodes between ``loss`` and the gradients of ``params``, by id.

    Without parameters, every node reachable from the loss; None when the graph is unknown
    (no loss tensor, or a graph too large to walk), meaning "do not filter". The nodes are
    the values: some torch releases hand out a new Python object for a node once the last
    one died, so an id is only the node's while that object is held.
    """
    root = getattr(loss, "grad_fn", None)
    if root is None:
        return None
    targets = {id(p) for p in params} if params is not None else None
    children: dict[int, list[Any]] = {}
    order: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in children:
            continue
        if len(children) > _MAX_NODES:
            return None
        kids = [n for n, _ in getattr(node, "next_functions", ()) if n is not None]
        children[id(node)] = kids
        order.append(node)
        stack.extend(kids)
    if targets is None:
        return {id(node): node for node in order}
    # Reaches a target: an AccumulateGrad of a bad parameter, or a node with such a child.
    # Settled in reverse discovery order, repeated until stable (the graph is a DAG, so a few
    # passes settle it; each pass is linear).
    reach: dict[int, bool] = {}
    for node in order:
        var = getattr(node, "variable", None)
        reach[id(node)] = var is not None and id(var) in targets
    changed = True
    while changed:
        changed = False
        for node in reversed(order):
            if not reach[id(node)] and any(reach.get(id(k), False) for k in children[id(node)]):
                reach[id(node)] = changed = True
    return {id(node): node for node in order if reach[id(node)]}


def outputs_with_grads(
    roots: list[Any], outputs: list[Any]
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each replayed root output that requires grad, paired with the gradient the step's own
    output got (kept by the root's records), in output order; outputs with none are left out."""
    pairs = []
    for root, output in zip(roots, outputs, strict=True):
        kept = {
            i: node_grads[nr]
            for (i, nr), node_grads in (root.grads or {}).items()
            if nr < len(node_grads)
        }
        for i, (_, t) in enumerate(iter_tensors(output, "output")):
            grad = kept.get(i)
            if grad is not None and t.requires_grad:
                pairs.append((t, grad))
    return pairs


def downstream_only(outputs: list[torch.Tensor]) -> list[int]:
    """Indices of the outputs no other output was computed from.

    The gradient kept for an output is all that flowed into it, including what came through
    the outputs computed from it; differentiating both would count that path twice.
    """
    nodes = [t.grad_fn for t in outputs]
    upstream: set[int] = set()
    for start in nodes:
        others = {id(n): j for j, n in enumerate(nodes) if n is not None and n is not start}
        if start is None or not others:
            continue
        seen: dict[int, Any] = {}  # holding the nodes keeps their ids theirs (see above)
        stack = [n for n, _ in start.next_functions if n is not None]
        while stack and len(seen) < _MAX_NODES:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            if id(node) in others:
                upstream.add(others[id(node)])
            stack.extend(n for n, _ in node.next_functions if n is not None)
    return [i for i in range(len(outputs)) if i not in upstream]


def find_backward_producer(
    records: list[OpRecord],
    loss: torch.Tensor | None = None,
    params: Iterable[torch.Tensor] | None = None,
) -> OpFinding | None:
    """The recorded op backward meets first whose gradient is non-finite from finite ones."""
    on_path = nodes_on_path(loss, params)
    for rec in reversed(records):
        node = getattr(rec.output, "grad_fn", None)
        if node is None or rec.func is None:
            continue
        if on_path is not None and id(node) not in on_path:
            continue
        kind = _singular(rec)
        if kind is not None:
            return _backward_finding(rec, node, kind)
    return None


def replay_module_backward(module: torch.nn.Module, args: Any, kwargs: Any) -> OpFinding | None:
    """Re-run one module call with grad on and every op recorded, then look for the op whose
    gradient is born non-finite inside it (the caller keeps the tracer's hooks quiet)."""

    def leaf(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and is_checked(x):
            return x.detach().requires_grad_(True)
        return x

    args, kwargs = tree_map(leaf, tuple(args or ())), tree_map(leaf, dict(kwargs or {}))
    watch = Replay()
    try:
        with torch.enable_grad(), watch:
            module.forward(*args, **kwargs)
    except Exception:
        return None
    return find_backward_producer(watch.records)


def _singular(rec: OpRecord) -> str | None:
    """Re-run ``rec`` alone on finite inputs and differentiate it: "nan" or "inf" when a
    gradient w.r.t. an input comes out non-finite.

    The incoming gradient is 1 where the output is finite, and 0 where it is not: such a value
    reached no finite loss, so whatever came after it discarded it and sends it 0.
    """
    leaves: list[torch.Tensor] = []

    def swap(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.requires_grad and is_checked(x):
            leaf = x.detach().clone().requires_grad_(True)
            leaves.append(leaf)
            return leaf.clone()  # a non-leaf, so an in-place op can run on it
        return x

    try:
        args = tree_map(swap, tuple(rec.args))
        kwargs = tree_map(swap, dict(rec.kwargs or {}))
        if not leaves or not all(bool(torch.isfinite(x).all()) for x in leaves):
            return None  # a non-finite input: this op passes a value on, it does not make it
        with torch.enable_grad():
            out = rec.func(*args, **kwargs)
        outs = [t for _, t in iter_tensors(out, "o") if t.requires_grad and is_checked(t)]
        if not outs:
            return None
        incoming = [torch.isfinite(t.detach()).to(t.dtype) for t in outs]
        grads = torch.autograd.grad(outs, leaves, incoming, allow_unused=True)
    except Exception:
        return None
    bad = [g for g in grads if g is not None and not bool(torch.isfinite(g).all())]
    if not bad:
        return None
    return "nan" if any(bool(torch.isnan(g).any()) for g in bad) else "inf"


def _backward_finding(rec: OpRecord, node: Any, kind: str) -> OpFinding:
    return finding_of(rec, gradient=(node.name(), kind))
