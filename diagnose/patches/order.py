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
from diagnose.patches.source import NoPatch, Script, code_of, dotted

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
    smalls = _the_calls(ctx)
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


def _the_calls(ctx: PatchContext) -> dict[str, cst.BaseSmallStatement]:
    """The simple statements of the run's backward, zero_grad and step: the one of each kind
    that ran; with several optimizers (a GAN), the zero_grad and step of the one whose steps
    found cleared gradients, and the backward nearest before its step (after, when none is)."""
    learning = ctx.report.learning
    several = learning is not None and learning.optimizers > 1
    name = learning.order_optimizer if several else None  # type: ignore[union-attr]
    if name is None:
        return {kind: _the_call(ctx, kind) for kind in KINDS}
    found = {kind: _the_call(ctx, kind, receiver=name) for kind in ("zero_grad", "step")}
    script = ctx.script
    step_line = script.statement_of(found["step"])
    block = script.parent(step_line)
    siblings = list(block.body) if block is not None else []  # type: ignore[union-attr]
    candidates = [
        small
        for call in _own_calls(ctx, "backward")
        if (small := script.small_statement_of(call)) is not None
        and script.statement_of(small) in siblings
    ]
    if not candidates:
        raise NoPatch(
            f"no backward() stands in the block of {name}.step(): reorder the training "
            "loop's calls as the example shows"
        )
    at = siblings.index(step_line)

    def distance(small: cst.BaseSmallStatement) -> tuple[int, int]:
        index = siblings.index(script.statement_of(small))
        return (0, at - index) if index <= at else (1, index - at)

    found["backward"] = min(candidates, key=distance)
    return {kind: found[kind] for kind in KINDS}


def _own_calls(ctx: PatchContext, method: str, receiver: str | None = None) -> list[cst.Call]:
    script = ctx.script
    calls = [c for c in script.calls(method) if script.is_own_statement(c)]
    if receiver is not None:
        # the script's name for the optimizer, or an attribute of that name (self.opt_g)
        calls = [c for c in calls if _receiver(c) in (receiver, f"self.{receiver}")]
    ran = ctx.ran_at(method)
    return [c for c in calls if script.line(c) in ran] if ran else calls


def _receiver(call: cst.Call) -> str | None:
    return dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None


def _the_call(ctx: PatchContext, kind: str, receiver: str | None = None) -> cst.BaseSmallStatement:
    """The simple statement that is the run's one ``kind`` call (on ``receiver`` when given)."""
    script = ctx.script
    calls = _own_calls(ctx, kind, receiver)
    if len(calls) != 1:
        what = f"{receiver}.{kind}()" if receiver else f"{kind}()"
        raise NoPatch(
            f"{len(calls)} {what} statements that ran: reorder the training loop's calls "
            "as the example shows"
        )
    small = script.small_statement_of(calls[0])
    assert small is not None
    return small
