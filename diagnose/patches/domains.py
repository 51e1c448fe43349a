"""clamp-into-domain: clamp the input of a fractional power or of acos/asin on the event's line.

``x ** p`` (0 < p < 1) becomes ``x.clamp(min=eps) ** p`` and ``torch.acos(x)`` becomes
``torch.acos(x.clamp(-1 + eps, 1 - eps))``: at the clamped edge the derivative is finite, and
clamp's own gradient is 0 there, so nothing infinite reaches the weights.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.guards import _receiver_or_arg, _set_operand, _wrap
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, number

_ARC = ("acos", "asin", "arccos", "arcsin")
# 1 - eps must differ from 1 in the dtype: float16 steps by 4.9e-4 just below 1, bfloat16 by
# 3.9e-3, float32 by 6e-8.
ARC_EPS = {"float16": "1e-3", "bfloat16": "1e-2"}
DEFAULT_ARC_EPS = "1e-6"


def _fractional(expr: cst.BaseExpression | None) -> bool:
    value = number(expr) if expr is not None else None
    return value is not None and 0 < value < 1


def _is_fractional_power(node: cst.CSTNode) -> bool:
    """``x ** p``, ``torch.pow(x, p)`` or ``x.pow(p)`` with a plain exponent 0 < p < 1."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, cst.Power) and _fractional(node.right)
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    if node.func.attr.value != "pow":
        return False
    exponent_at = 1 if _torch_function(node.func) else 0
    return len(node.args) > exponent_at and _fractional(node.args[exponent_at].value)


def _is_arc(node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return False
    target, _ = _receiver_or_arg(node)
    return node.func.attr.value in _ARC and target is not None


def _pow_base(node: cst.CSTNode) -> tuple[cst.BaseExpression, bool]:
    """(the base of a power, whether it is the receiver of ``base.pow(p)``)."""
    if isinstance(node, cst.BinaryOperation):
        return node.left, False
    if _torch_function(node.func):
        return node.args[0].value, False
    return node.func.value, True


def _torch_function(func: cst.BaseExpression) -> bool:
    return isinstance(func, cst.Attribute) and code_of(func.value) in ("torch", "math", "np")


def _clamp_power(ctx: PatchContext, node: cst.CSTNode, edit) -> str:
    eps = ctx.eps
    base, method = _pow_base(node)
    clamped = f"{_wrap(base)}.clamp(min={eps})"
    if isinstance(node, cst.BinaryOperation):
        edit.replace(base, clamped)
    elif method:
        edit.replace(node.func, f"{clamped}.pow")
    else:
        _set_operand(edit, node, False, operand=clamped, receiver=clamped, name="pow")
    return f"{code_of(base)} clamped at {eps} before the fractional power"


def _clamp_arc(ctx: PatchContext, node: cst.Call, edit) -> str:
    dtype = ((ctx.report.event.dtype if ctx.report.event else None) or "").removeprefix("torch.")
    eps = ARC_EPS.get(dtype, DEFAULT_ARC_EPS)
    target, method = _receiver_or_arg(node)
    name = node.func.attr.value
    clamped = f"{_wrap(target)}.clamp(-1 + {eps}, 1 - {eps})"
    _set_operand(edit, node, method, operand=clamped, receiver=clamped, name=name)
    return f"{name}'s input {code_of(target)} clamped into [-1 + {eps}, 1 - {eps}]"


@patcher("clamp-into-domain")
def clamp_into_domain(ctx: PatchContext) -> Patched:
    base = (ctx.report.event.op if ctx.report.event else None) or ""
    arc = any(name in base.lower() for name in _ARC)
    what = "an acos()/asin()" if arc else "a fractional power (x ** p, 0 < p < 1)"
    accept = _is_arc if arc else _is_fractional_power
    nodes = ctx.nodes_at_event((cst.Call, cst.BinaryOperation), what, accept)
    edit = ctx.edit()
    notes = [
        _clamp_arc(ctx, node, edit) if arc else _clamp_power(ctx, node, edit) for node in nodes
    ]
    if not notes:
        raise NoPatch(f"no {what} to clamp")
    return Patched(edit.result(), "; ".join(notes) + ": its derivative is infinite at the edge")
