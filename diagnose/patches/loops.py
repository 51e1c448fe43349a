"""sanitize-inputs and guard-ignored-targets: skip the bad batches in the training loop.

The training loop is the loop that ran ``backward`` and ``optimizer.step`` (``place``); when it
unpacks batches (``for x, y in loader:`` or ``for i, (x, y) in enumerate(loader):``) the guard
goes first in its body and ``continue``s past a batch that would poison the step. A training
loop that takes no batch (``for i in range(steps)`` over fixed tensors) gets no guard: a
``continue`` there would skip every step.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.place import training_loop
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, dotted

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
    """The training loop (``place.training_loop``) and the names it unpacks batches into."""
    loop = training_loop(ctx)
    line = ctx.script.line(loop)
    if not isinstance(loop, cst.For):
        raise NoPatch(
            f"the training loop on line {line} is a `while` loop that takes no batch: "
            "filter the bad samples where the data is loaded"
        )
    it, target = loop.iter, loop.target
    if (
        isinstance(it, cst.Call)
        and dotted(it.func) == "enumerate"
        and isinstance(target, cst.Tuple)
        and len(target.elements) == 2
    ):
        target = target.elements[1].value
    names = _names(target) if not _counts(it) else []
    if not names:
        raise NoPatch(
            f"the training loop on line {line} does not take its batches from a loader "
            f"(`for {code_of(loop.target)} in {code_of(loop.iter)}`): filter the bad "
            "samples where the data is loaded"
        )
    return loop, names


def _counts(it: cst.BaseExpression) -> bool:
    """True for ``range(...)``: the loop counts steps, its name holds no batch."""
    return isinstance(it, cst.Call) and dotted(it.func) == "range"


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
