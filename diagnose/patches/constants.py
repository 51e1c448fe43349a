"""representable-constant: a "minus infinity" stand-in the op's dtype cannot hold becomes the
dtype's own lowest value.

On the event's line, a negative literal beyond the dtype's range (``-1e9`` in float16) is
replaced by ``torch.finfo(torch.<dtype>).min``, as transformers builds its attention masks.
A positive one is a scale or a bound whose right value only the author knows: no patch.
"""

from __future__ import annotations

import libcst as cst

from diagnose.facts.extract import op_dtype
from diagnose.facts.heuristics import DTYPE_MAX
from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.source import NoPatch, number


def representable_constant(ctx: PatchContext) -> Patched:
    dtype = op_dtype(ctx.report.event)
    if dtype is None:
        raise NoPatch("the event does not say which dtype the op computed in")
    limit = DTYPE_MAX[dtype]

    def beyond(node: cst.CSTNode) -> bool:
        value = number(node)
        parent = ctx.script.parent(node)
        negated = isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator,
                                                                         cst.Minus)
        return value is not None and abs(value) > limit and not negated

    found = ctx.nodes_at_event((cst.Float, cst.Integer, cst.UnaryOperation),
                               f"number beyond {dtype}'s range", beyond)
    negative = [n for n in found if (number(n) or 0.0) < 0]
    if not negative:
        raise NoPatch(f"the number beyond {dtype}'s range is a positive scale or bound: pick "
                      f"one below {limit:.5g} (torch.finfo(torch.{dtype}).max)")
    torch_name = ctx.torch_name()
    edit = ctx.edit()
    for node in negative:
        edit.replace(node, f"{torch_name}.finfo({torch_name}.{dtype}).min")
    return Patched(edit.result(), f"the lowest finite {dtype} value replaces the number it "
                                  "could not hold")
