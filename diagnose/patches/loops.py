"""sanitize-inputs and guard-ignored-targets: skip the bad batches in the training loop.

The training loop is the ``for`` loop that unpacks batches (``for x, y in loader:`` or
``for i, (x, y) in enumerate(loader):``); the guard goes first in its body and ``continue``s
past a batch that would poison the step.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, dotted

IGNORE_INDEX = -100
TARGET_HINTS = ("label", "target", "y")


@patcher("sanitize-inputs")
def sanitize_inputs(ctx: PatchContext) -> Patched:
    loop, names = _batch_loop(ctx)
    torch = ctx.torch_name()
    tensors = ", ".join(names) + ("," if len(names) == 1 else "")
    edit = ctx.edit()
    edit.insert_first(
        loop,
        f"if not all({torch}.isfinite(t).all() for t in ({tensors})):\n"
        f"    continue  # skip a batch with nan/inf values\n",
    )
    return Patched(
        edit.result(),
        f"skips batches whose {', '.join(names)} hold nan/inf; "
        "better still, clean or impute the data where it is loaded",
    )


@patcher("guard-ignored-targets")
def guard_ignored_targets(ctx: PatchContext) -> Patched:
    loop, names = _batch_loop(ctx)
    labels = [n for n in names if any(h in n.lower() for h in TARGET_HINTS)]
    if len(labels) != 1:
        raise NoPatch(f"cannot tell which of {', '.join(names)} holds the targets")
    edit = ctx.edit()
    edit.insert_first(
        loop,
        f"if not ({labels[0]} != {IGNORE_INDEX}).any():\n"
        f"    continue  # every target is ignored: the mean loss would be 0/0\n",
    )
    return Patched(edit.result(), f"skips batches in which {labels[0]} holds only {IGNORE_INDEX}")


def _batch_loop(ctx: PatchContext) -> tuple[cst.For, list[str]]:
    """The innermost loop that unpacks batches into names, and those names."""
    candidates = []
    for loop in ctx.script.nodes(cst.For):
        it = loop.iter
        if isinstance(it, cst.Call) and dotted(it.func) == "range":
            continue
        target = loop.target
        if (
            isinstance(it, cst.Call)
            and dotted(it.func) == "enumerate"
            and isinstance(target, cst.Tuple)
            and len(target.elements) == 2
        ):
            target = target.elements[1].value
        names = _names(target)
        if names:
            candidates.append((loop, names))
    training = [c for c in candidates if _trains(c[0])]
    candidates = training or candidates
    if not candidates:
        raise NoPatch(
            "no `for ... in loader:` loop unpacking batches in the script: "
            "filter the non-finite samples where the data is loaded"
        )
    line = ctx.event_line
    if line is not None:
        holding = [c for c in candidates if line in ctx.script.lines(c[0])]
        if holding:
            return holding[-1]
    if len(candidates) > 1:
        lines = ", ".join(str(ctx.script.line(c[0])) for c in candidates)
        raise NoPatch(
            f"{len(candidates)} loops over batches (lines {lines}): guard the "
            "training loop as in the example"
        )
    return candidates[0]


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        out = []
        for element in target.elements:
            if not isinstance(element.value, cst.Name):
                return []
            out.append(element.value.value)
        return out
    return []


def _trains(loop: cst.For) -> bool:
    """True when the loop's body calls ``backward()`` or ``step()`` (it is a training loop)."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
                "backward",
                "step",
            ):
                found = True

    loop.body.visit(Finder())
    return found
