"""fix-initialization: take an absurd init scale (a gain or std of 1e6 and more) back to 1.

A script's own initialisation scales weights through a constant or a ``std=``/``gain=`` argument;
a literal of 1e6 or more there is the bug in every case we know of. Anything subtler (a wrong
fan, an init loop that misses layers) is beyond a mechanical patch and gets a note.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, format_number, number

HUGE = 1e6
INIT_KEYWORDS = ("std", "gain", "a", "b", "scale", "mean")


@patcher("fix-initialization")
def fix_initialization(ctx: PatchContext) -> Patched:
    script = ctx.script
    found: list[tuple[cst.BaseExpression, str]] = []
    for node in script.nodes((cst.Assign, cst.Arg)):
        value = node.value
        literal = number(value)
        if literal is None or abs(literal) < HUGE:
            continue
        if isinstance(node, cst.Arg):
            if node.keyword is None or node.keyword.value not in INIT_KEYWORDS:
                continue
            found.append((value, f"{node.keyword.value}={format_number(literal)}"))
        elif len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            found.append((value, f"{node.targets[0].target.value} = {format_number(literal)}"))
    if not found:
        return _dead_bias(ctx)
    if len(found) > 1:
        raise NoPatch(
            "several huge constants ("
            + ", ".join(w for _, w in found)
            + "): set the one your init uses back to ~1"
        )
    value, what = found[0]
    edit = ctx.edit()
    edit.replace(value, "1.0")
    return Patched(
        edit.result(), f"{what} -> 1.0: weights of that scale overflow the first forward pass"
    )


def _dead_bias(ctx: PatchContext) -> Patched:
    """A bias initialised to a negative constant (``constant_(m.bias, -4.0)``,
    ``m.bias.fill_(-4.0)``) keeps every ReLU after it at 0: it goes back to 0."""
    found = []
    for call in ctx.script.calls("constant_", "fill_"):
        method = isinstance(call.func, cst.Attribute) and call.func.attr.value == "fill_"
        if method:
            owner, value = call.func.value, call.args[0].value if call.args else None
        else:
            owner = call.args[0].value if call.args else None
            value = call.args[1].value if len(call.args) > 1 else None
        literal = None if value is None else number(value)
        if owner is not None and "bias" in code_of(owner) and literal is not None and literal <= -1:
            found.append((value, literal))
    if len(found) != 1:
        raise NoPatch(
            "no init scale of 1e6 or more and no negative constant bias in the script: check "
            "the init code against the example (std ~ 1/sqrt(fan_in), zero biases)"
        )
    value, literal = found[0]
    edit = ctx.edit()
    edit.replace(value, "0.0")
    return Patched(
        edit.result(),
        f"bias init {format_number(literal)} -> 0.0: a negative bias keeps the ReLUs after it "
        "at 0, where they pass no gradient",
    )
