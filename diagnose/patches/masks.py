"""finite-mask-value: a ``masked_fill`` with -inf on the event's line fills torch.finfo's min.

``scores.masked_fill(pad, float("-inf"))`` becomes ``scores.masked_fill(pad,
torch.finfo(scores.dtype).min)``: a row masked everywhere then softmaxes to uniform weights
instead of 0/0, and rows with any real entry are unchanged (exp of the dtype's min is 0).
"""

from __future__ import annotations

import math

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, dotted, number

_INF_NAMES = ("math.inf", "torch.inf", "np.inf", "numpy.inf")
_FILLS = ("masked_fill", "masked_fill_")


def is_minus_inf(expr: cst.BaseExpression) -> bool:
    """``float("-inf")``, ``-float("inf")``, ``-math.inf``, ``-torch.inf``, ``-np.inf``."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _plus_inf(expr.expression)
    return _float_of(expr) == -math.inf


def _plus_inf(expr: cst.BaseExpression) -> bool:
    return dotted(expr) in _INF_NAMES or _float_of(expr) == math.inf


def _float_of(expr: cst.BaseExpression) -> float | None:
    if not isinstance(expr, cst.Call) or dotted(expr.func) != "float" or len(expr.args) != 1:
        return None
    text = expr.args[0].value
    if not isinstance(text, cst.SimpleString):
        return number(text)
    try:
        return float(text.evaluated_value)
    except (TypeError, ValueError):
        return None


def _fill(call: cst.Call) -> tuple[cst.BaseExpression, int] | None:
    """(the filled tensor, the index of the fill value's argument) of a masked_fill call."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in _FILLS:
        return None
    if dotted(func.value) == "torch":
        return (call.args[0].value, 2) if len(call.args) >= 3 else None
    return (func.value, 1) if len(call.args) >= 2 else None


def _fills_minus_inf(node: cst.CSTNode) -> bool:
    found = _fill(node) if isinstance(node, cst.Call) else None
    if found is None:
        return False
    value = node.args[found[1]]
    return value.keyword is None or value.keyword.value == "value"


def _minus_inf_fills(ctx: PatchContext) -> list[cst.Call]:
    def accept(node: cst.CSTNode) -> bool:
        if not _fills_minus_inf(node):
            return False
        _, at = _fill(node)
        return is_minus_inf(node.args[at].value)

    return ctx.nodes_at_event(cst.Call, 'a masked_fill with float("-inf")', accept)


@patcher("finite-mask-value")
def finite_mask_value(ctx: PatchContext) -> Patched:
    torch_name = ctx.torch_name()
    edit = ctx.edit()
    notes = []
    for call in _minus_inf_fills(ctx):
        tensor, at = _fill(call)
        receiver = code_of(tensor)
        if not isinstance(tensor, cst.Name | cst.Attribute):
            receiver = f"({receiver})"
        lowest = f"{torch_name}.finfo({receiver}.dtype).min"
        edit.replace(call.args[at].value, lowest)
        notes.append(f"the mask of {code_of(tensor)} fills {lowest}")
    if not notes:
        raise NoPatch('no masked_fill with float("-inf") to make finite')
    return Patched(
        edit.result(),
        "; ".join(notes) + ": a row masked everywhere softmaxes to uniform weights, not 0/0",
    )
