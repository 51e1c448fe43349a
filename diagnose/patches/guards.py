"""stabilize-log, guard-division, guard-sqrt, stabilize-exp: fix the op on the event's line.

Each looks for its op on the line where the event was born (``log``, ``/``, ``sqrt``, ``exp``);
when the event has no line in the script, a script with exactly one such op is patched there.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import Edit, NoPatch, code_of, dotted, number

LOG_FLOOR = "1e-7"  # log(1e-7) = -16: finite, and its gradient stays below 1e7
EXP_CEILING = "80.0"  # exp(80) = 5.5e34 < float32's 3.4e38


def _receiver_or_arg(call: cst.Call) -> tuple[cst.BaseExpression | None, bool]:
    """(the tensor an op applies to, whether it is the method form ``x.op()``)."""
    func = call.func
    if isinstance(func, cst.Attribute) and dotted(func.value) in ("torch", "math", "np"):
        return (call.args[0].value if call.args else None), False
    if isinstance(func, cst.Attribute) and not call.args:
        return func.value, True
    return None, False


def _wrap(expr: cst.BaseExpression) -> str:
    """``expr`` as the receiver of a method call, parenthesised when it needs to be."""
    text = code_of(expr)
    atomic = isinstance(expr, cst.Name | cst.Attribute | cst.Call | cst.Subscript) or (
        expr.lpar and expr.rpar
    )
    return text if atomic else f"({text})"


def _set_operand(
    edit: Edit, call: cst.Call, method: bool, *, operand: str, receiver: str, name: str
) -> None:
    """Give ``call`` a new operand: ``receiver.name(...)`` for a method call (``x.log()``),
    ``operand`` as the first argument for a function call (``torch.log(x)``)."""
    if method:
        edit.replace(call.func, f"{receiver}.{name}")
    else:
        edit.replace(
            call,
            call.with_changes(
                args=[
                    call.args[0].with_changes(value=cst.parse_expression(operand)),
                    *call.args[1:],
                ]
            ),
        )


def _ops(ctx: PatchContext, name: str, what: str) -> list[cst.Call]:
    def is_op(call: cst.Call) -> bool:
        target, _ = _receiver_or_arg(call)
        func = call.func
        return target is not None and isinstance(func, cst.Attribute) and func.attr.value == name

    return ctx.nodes_at_event(cst.Call, what, is_op)


@patcher("stabilize-log")
def stabilize_log(ctx: PatchContext) -> Patched:
    edit = ctx.edit()
    notes = []
    for call in _ops(ctx, "log", "log()"):
        target, method = _receiver_or_arg(call)
        inner = target
        if (
            isinstance(inner, cst.Call)
            and isinstance(inner.func, cst.Attribute)
            and (inner.func.attr.value == "softmax")
            and not method
        ):
            edit.replace(
                call, inner.with_changes(func=inner.func.with_changes(attr=cst.Name("log_softmax")))
            )
            notes.append("log(softmax(x)) -> log_softmax(x)")
            continue
        clamped = f"{_wrap(target)}.clamp_min({LOG_FLOOR})"
        _set_operand(edit, call, method, operand=clamped, receiver=clamped, name="log")
        notes.append(f"log({code_of(target)}) clamped at {LOG_FLOOR}")
    return Patched(edit.result(), "; ".join(notes) + " (log(0) = -inf)")


@patcher("guard-division")
def guard_division(ctx: PatchContext) -> Patched:
    def divides_by_tensor(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BinaryOperation):
            return isinstance(node.operator, cst.Divide) and number(node.right) is None
        if isinstance(node, cst.Call):
            name = dotted(node.func) or ""
            return name.endswith(("torch.div", "torch.true_divide")) and len(node.args) >= 2
        return False

    eps = ctx.eps
    edit = ctx.edit()
    notes, guarded = [], []
    for node in ctx.nodes_at_event(
        (cst.BinaryOperation, cst.Call), "a division", divides_by_tensor
    ):
        denominator = node.right if isinstance(node, cst.BinaryOperation) else node.args[1].value
        if _added_number(denominator) is not None:
            guarded.append(code_of(denominator))
            continue
        edit.replace(denominator, f"({code_of(denominator)} + {eps})")
        notes.append(f"{code_of(denominator)} + {eps}")
    if not notes:
        # A divisor that already adds an eps was 0 only because that eps was: another eps
        # beside it would hide the cause (representable-eps replaces the number itself).
        raise NoPatch(
            f"the denominator {'; '.join(guarded)} already adds an eps: if it was "
            "still 0, that eps is 0 in the op's dtype"
        )
    return Patched(edit.result(), "the denominator gets an eps: " + "; ".join(notes))


def _added_number(expr: cst.BaseExpression) -> float | None:
    """The number ``expr`` adds to something (``std + 1e-8``, ``1e-8 + std``), else None."""
    if not isinstance(expr, cst.BinaryOperation) or not isinstance(expr.operator, cst.Add):
        return None
    right = number(expr.right)
    return right if right is not None else number(expr.left)


@patcher("guard-sqrt")
def guard_sqrt(ctx: PatchContext) -> Patched:
    def is_sqrt(node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Call):
            target, _ = _receiver_or_arg(node)
            return (
                target is not None
                and isinstance(node.func, cst.Attribute)
                and (node.func.attr.value == "sqrt")
            )
        return (
            isinstance(node, cst.BinaryOperation)
            and isinstance(node.operator, cst.Power)
            and number(node.right) == 0.5
        )

    eps = ctx.eps
    edit = ctx.edit()
    notes = []
    for node in ctx.nodes_at_event((cst.Call, cst.BinaryOperation), "sqrt()", is_sqrt):
        if isinstance(node, cst.BinaryOperation):
            target = node.left
            edit.replace(target, f"({code_of(target)} + {eps})")
        else:
            target, method = _receiver_or_arg(node)
            guarded = f"{code_of(target)} + {eps}"
            _set_operand(edit, node, method, operand=guarded, receiver=f"({guarded})", name="sqrt")
        notes.append(f"sqrt({code_of(target)} + {eps})")
    return Patched(edit.result(), "; ".join(notes) + ": the gradient of sqrt at 0 is infinite")


@patcher("stabilize-exp")
def stabilize_exp(ctx: PatchContext) -> Patched:
    edit = ctx.edit()
    notes = []
    for call in _ops(ctx, "exp", "exp()"):
        target, method = _receiver_or_arg(call)
        if _in_softmax(ctx, call):
            shifted = f"{_wrap(target)} - {_wrap(target)}.amax(dim=-1, keepdim=True)"
            note = "exp(z - max(z)): softmax is unchanged by the shift and exp stays <= 1"
        else:
            shifted = f"{_wrap(target)}.clamp_max({EXP_CEILING})"
            note = f"exp's argument clamped at {EXP_CEILING} (exp(88.7) overflows float32)"
        _set_operand(edit, call, method, operand=shifted, receiver=f"({shifted})", name="exp")
        notes.append(note)
    return Patched(edit.result(), "; ".join(dict.fromkeys(notes)))


def _in_softmax(ctx: PatchContext, call: cst.Call) -> bool:
    """True when the exp's result is normalised by its own sum (a hand-written softmax)."""
    func = next((a for a in ctx.script.ancestors(call) if isinstance(a, cst.FunctionDef)), None)
    if func is None:
        return False
    if "softmax" in func.name.value.lower():
        return True
    body = code_of(func)
    return ".sum(" in body and "/" in body
