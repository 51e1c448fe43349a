"""Constants the op's dtype cannot hold.

representable-constant: a "minus infinity" stand-in the op's dtype cannot hold becomes the
dtype's own lowest value. On the event's line, a negative literal beyond the dtype's range
(``-1e9`` in float16) is replaced by ``torch.finfo(torch.<dtype>).min``, as transformers builds
its attention masks. A positive one is a scale or a bound whose right value only the author
knows: no patch.

representable-eps: an eps that is 0 in the op's dtype (``std + 1e-8`` in float16) becomes one
the dtype holds, on the line that added it.
"""

from __future__ import annotations

import libcst as cst

from diagnose.facts.extract import extract_facts, op_dtype
from diagnose.facts.heuristics import DTYPE_MAX
from diagnose.formatting import num
from diagnose.patches.context import EPS, PatchContext, Patched, same_file
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, number


@patcher("representable-constant")
def representable_constant(ctx: PatchContext) -> Patched:
    dtype = op_dtype(ctx.report.event)
    if dtype is None:
        raise NoPatch("the event does not say which dtype the op computed in")
    limit = DTYPE_MAX[dtype]

    def beyond(node: cst.CSTNode) -> bool:
        value = number(node)
        parent = ctx.script.parent(node)
        negated = isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus)
        return value is not None and abs(value) > limit and not negated

    found = ctx.nodes_at_event(
        (cst.Float, cst.Integer, cst.UnaryOperation), f"number beyond {dtype}'s range", beyond
    )
    negative = [n for n in found if (number(n) or 0.0) < 0]
    if not negative:
        raise NoPatch(
            f"the number beyond {dtype}'s range is a positive scale or bound: pick "
            f"one below {limit:.5g} (torch.finfo(torch.{dtype}).max)"
        )
    torch_name = ctx.torch_name()
    edit = ctx.edit()
    for node in negative:
        edit.replace(node, f"{torch_name}.finfo({torch_name}.{dtype}).min")
    return Patched(
        edit.result(), f"the lowest finite {dtype} value replaces the number it could not hold"
    )


@patcher("representable-eps")
def representable_eps(ctx: PatchContext) -> Patched:
    facts, _ = extract_facts(ctx.report)
    eps, dtype = facts.get("op_input.eps_lost"), facts.get("op_input.eps_dtype")
    if eps is None or dtype is None:
        raise NoPatch("the event shows no eps that its dtype rounds to 0")
    replacement = EPS.get(dtype)
    if replacement is None:
        raise NoPatch(
            f"no usual eps for {dtype}: pick one above {num(facts['op_input.eps_dtype_smallest'])}"
        )
    source = next((s for s in ctx.report.event.op_input_sources or () if eps in s.numbers), None)
    loc = source.location if source is not None else None
    line = loc.line if loc is not None and same_file(loc.file, ctx.path) else ctx.event_line
    if line is None:
        raise NoPatch(
            f"the eps {num(eps)} was added outside the script"
            + (f", at {loc.file}:{loc.line}" if loc is not None else "")
        )
    found = [n for n in ctx.script.on_line(line, (cst.Float, cst.Integer)) if number(n) == eps]
    if not found:
        raise NoPatch(
            f"no literal {num(eps)} on line {line}: the eps comes from a variable there; "
            f"set it to {replacement} or more"
        )
    edit = ctx.edit()
    for node in found:
        edit.replace(node, replacement)
    return Patched(
        edit.result(),
        f"eps {replacement}: {num(eps)} is 0 in {dtype}, so the guarded "
        "value still reached the op as 0",
    )
