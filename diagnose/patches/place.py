"""Where loop-level edits go: the loop that ran ``backward`` and ``optimizer.step``.

A ``for`` loop that looks like a batch loop may be the model's own loop over time steps; an
LBFGS script calls ``loss.backward()`` inside a closure and ``optimizer.step(closure)`` in the
loop. So the training loop is found from the lines that called ``step`` and ``backward`` in the
run (``config.training_calls``), or, for a report without them, from the script's own
``backward()``/``.step()`` calls: the innermost loop around them in their own function. A
``backward`` inside a closure has no loop of its own there, and the ``step`` that calls the
closure then places the loop. No single such loop: NoPatch, with the lines.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext
from diagnose.patches.source import NoPatch

Loop = cst.For | cst.While


def call_lines(ctx: PatchContext, kind: str) -> list[int]:
    """Lines of the script that call ``kind`` (backward / step / zero_grad): as the run
    recorded them, else every such method call in the source."""
    ran = ctx.ran_at(kind)
    if ran is not None:
        return ran
    method = {"step": "step", "backward": "backward", "zero_grad": "zero_grad"}[kind]
    return sorted(
        {ctx.script.line(c) for c in ctx.script.calls(method) if isinstance(c.func, cst.Attribute)}
    )


def training_loop(ctx: PatchContext) -> Loop:
    """The one loop that runs the training steps (see the module docstring)."""
    lines = call_lines(ctx, "step") + call_lines(ctx, "backward")
    if not lines:
        raise NoPatch("no `backward()` or optimizer `step()` call in the script")
    loops = _loops_at(ctx, lines)
    if not loops:
        where = ", ".join(str(n) for n in sorted(set(lines))[:6])
        raise NoPatch(
            f"the backward/step calls (lines {where}) are in no loop of the script: "
            "edit the training loop by hand as in the example"
        )
    innermost = [loop for loop in loops if not any(_inside(ctx, other, loop) for other in loops)]
    if len(innermost) > 1:
        where = ", ".join(str(ctx.script.line(loop)) for loop in innermost[:6])
        raise NoPatch(
            f"{len(innermost)} loops run training steps (lines {where}): "
            "edit the one that met the bad batch as in the example"
        )
    return innermost[0]


def _loops_at(ctx: PatchContext, lines: list[int]) -> list[Loop]:
    """The innermost loop, in its own scope, around each call on ``lines``."""
    script = ctx.script
    found: dict[int, Loop] = {}
    for line in sorted(set(lines)):
        for call in script.on_line(line, cst.Call):
            loop = script.loop_of(call)
            if loop is not None:
                found.setdefault(id(loop), loop)
    return list(found.values())


def _inside(ctx: PatchContext, inner: Loop, outer: Loop) -> bool:
    """True when ``outer`` holds ``inner`` (``inner`` is nested in it)."""
    return inner is not outer and any(a is outer for a in ctx.script.ancestors(inner))
