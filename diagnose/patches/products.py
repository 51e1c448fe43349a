"""scale-before-product: move a product's scale onto an operand, or add attention's 1/sqrt(d).

On the event's line, the one ``a @ b`` (or ``torch.matmul(a, b)``) whose result overflowed:

* scaled after the product, ``(a @ b) / s`` or ``(a @ b) * s``, the scale moves onto the left
  operand, ``(a / s) @ b``: the same result, computed in range;
* unscaled attention scores (the report's ``accumulation.attention``), the left operand gets
  ``a.shape[-1] ** -0.5``: standard scaled attention. Only for an operand that is a plain name
  or attribute, which can be read twice.

Anything else keeps the example: which operand to scale by how much is the user's choice.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, dotted

_MATMULS = ("matmul", "bmm")


@patcher("scale-before-product")
def scale_before_product(ctx: PatchContext) -> Patched:
    event = ctx.report.event
    acc = event.accumulation if event is not None else None
    if acc is None:
        raise NoPatch("the report does not say what the product accumulated")
    products = ctx.nodes_at_event((cst.BinaryOperation, cst.Call), "a `@` product", _is_product)
    if len(products) != 1:
        raise NoPatch(
            f"{len(products)} products on the event's line: scale the operand of the one "
            "that overflowed as in the example"
        )
    product = products[0]
    left, right = _operands(product)
    script = ctx.script
    parent = script.parent(product)
    edit = ctx.edit()
    if (
        isinstance(parent, cst.BinaryOperation)
        and parent.left is product
        and isinstance(parent.operator, cst.Divide | cst.Multiply)
    ):
        sign = "/" if isinstance(parent.operator, cst.Divide) else "*"
        scale = code_of(parent.right)
        edit.replace(parent, _rebuilt(product, f"({code_of(left)} {sign} {scale})", right))
        return Patched(
            edit.result(),
            f"the scale `{sign} {scale}` is applied to {code_of(left)} before the product, not to "
            "its result: the same values, computed within float16's range",
        )
    if not acc.attention:
        raise NoPatch(
            "the product is not attention scores: scale an input down before it by hand (and "
            "back up after it if the magnitude matters), or compute it in bfloat16 / float32"
        )
    if not isinstance(left, cst.Name | cst.Attribute):
        raise NoPatch(
            f"the left operand `{code_of(left)}` is an expression: scale it by "
            "1/sqrt(d) before the product as in the example"
        )
    name = code_of(left)
    edit.replace(product, _rebuilt(product, f"({name} * {name}.shape[-1] ** -0.5)", right))
    return Patched(
        edit.result(),
        f"{name} is scaled by 1/sqrt(d) before the product: standard scaled attention, whose "
        "scores stay within float16's range",
    )


def _is_product(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, cst.MatrixMultiply)
    if isinstance(node, cst.Call):
        name = dotted(node.func) or ""
        return name.split(".")[-1] in _MATMULS and len(node.args) == 2
    return False


def _operands(product: cst.CSTNode) -> tuple[cst.BaseExpression, cst.BaseExpression]:
    if isinstance(product, cst.BinaryOperation):
        return product.left, product.right
    assert isinstance(product, cst.Call)
    return product.args[0].value, product.args[1].value


def _rebuilt(product: cst.CSTNode, left: str, right: cst.BaseExpression) -> str:
    if isinstance(product, cst.Call):
        return f"{code_of(product.func)}({left}, {code_of(right)})"
    return f"{left} @ {code_of(right)}"
