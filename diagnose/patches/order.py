"""fix-training-call-order: put backward, zero_grad and step of the training loop in an order
that lets each step apply the gradients of its own backward.

The lines come from what ran (``config.training_calls``), else from the script's only
``backward()``, ``zero_grad()`` and ``step()`` statements. Two moves, the least that mends the
order, each keeping the statement's own text:

* a ``step()`` before the ``backward()`` moves to just after it;
* a ``zero_grad()`` then left between the backward and the step moves to just before the
  backward (after the forward, which does not read the gradients).

All three must stand in one block (or on one line, joined by ``;``); anywhere else the order
is not one the source shows, and the patch says so.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, Script, code_of

KINDS = ("backward", "zero_grad", "step")


def mended(order: list[str]) -> list[str]:
    """``order`` (the three kinds among other items) with the two moves made."""
    return moves(order)[0]


def moves(order: list[str]) -> tuple[list[str], list[str]]:
    """``order`` with the two moves made, and the kinds moved (``step`` goes just after the
    backward, ``zero_grad`` just before it)."""
    items, moved = list(order), []
    if items.index("step") < items.index("backward"):
        items.remove("step")
        items.insert(items.index("backward") + 1, "step")
        moved.append("step")
    if items.index("backward") < items.index("zero_grad") < items.index("step"):
        items.remove("zero_grad")
        items.insert(items.index("backward"), "zero_grad")
        moved.append("zero_grad")
    return items, moved


@patcher("fix-training-call-order")
def fix_training_call_order(ctx: PatchContext) -> Patched:
    script = ctx.script
    smalls = {kind: _the_call(ctx, kind) for kind in KINDS}
    lines = {kind: script.statement_of(small) for kind, small in smalls.items()}
    edit = ctx.edit()
    if len({id(line) for line in lines.values()}) == 1:  # a; b; c on one line
        line = lines["backward"]
        assert line is not None
        body = list(line.body)
        names = [_kind_of(small, smalls) or str(i) for i, small in enumerate(body)]
        new = mended(names)
        if new == names:
            raise NoPatch(_in_order(script, smalls))
        by_name = dict(zip(names, body, strict=True))
        joined = [by_name[n].with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for n in new]
        edit.replace(line, line.with_changes(body=joined))
    else:
        parents = {id(script.parent(line)) for line in lines.values()}
        if len(parents) != 1 or any(len(line.body) != 1 for line in lines.values()):
            raise NoPatch(
                "backward(), zero_grad() and step() do not stand in one block of the loop: "
                "reorder them as the example shows"
            )
        block = script.parent(lines["backward"])
        statements = list(block.body)  # type: ignore[union-attr]
        kind_at = {id(line): kind for kind, line in lines.items()}
        names = [kind_at.get(id(s), str(i)) for i, s in enumerate(statements)]
        new, kinds = moves(names)
        if not kinds:
            raise NoPatch(_in_order(script, smalls))
        for kind in kinds:
            moved = lines[kind]
            edit.remove(moved)
            text = code_of(moved).strip()
            if kind == "step":
                edit.insert_after(lines["backward"], text)
            else:
                edit.insert_before(lines["backward"], text)
    order = ", ".join(f"{kind}()" for kind in new if kind in KINDS)
    return Patched(
        edit.result(),
        f"runs {order} in that order, so each step applies the gradients of its own backward",
    )


def _kind_of(small: cst.CSTNode, smalls: dict[str, cst.CSTNode]) -> str | None:
    return next((kind for kind, node in smalls.items() if node is small), None)


def _in_order(script: Script, smalls: dict[str, cst.CSTNode]) -> str:
    lines = ", ".join(f"{kind}() on line {script.line(node)}" for kind, node in smalls.items())
    return f"the calls already stand in a working order ({lines})"


def _the_call(ctx: PatchContext, kind: str) -> cst.BaseSmallStatement:
    """The simple statement that is the run's one ``kind`` call."""
    script = ctx.script
    method = "backward" if kind == "backward" else kind
    calls = [c for c in script.calls(method) if script.is_own_statement(c)]
    ran = ctx.ran_at(kind)
    if ran:
        calls = [c for c in calls if script.line(c) in ran]
    if len(calls) != 1:
        where = f" on the lines that ran it ({', '.join(map(str, ran))})" if ran else ""
        raise NoPatch(
            f"{len(calls)} {method}() statements{where}: reorder the training loop's calls "
            "as the example shows"
        )
    small = script.small_statement_of(calls[0])
    assert small is not None
    return small
