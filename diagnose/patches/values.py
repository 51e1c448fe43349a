"""The number literal behind a setting's expression in the script: a dict entry, a class
attribute or a keyword, where a config keeps it.

``weight_decay=HP["weight_decay"]`` reads a module-level dict literal, ``cfg.weight_decay`` a
class attribute (a dataclass field's default, a plain config class) or a keyword of the one
call that builds ``cfg`` (``SimpleNamespace(weight_decay=0.1)``). Each resolution must land on
one literal; anything else is None, and the patch says where to change the value instead.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.source import Script, dotted, number


def literal_behind(
    script: Script, value: cst.BaseExpression
) -> tuple[cst.BaseExpression | None, str | None]:
    """The number literal ``value`` reads, and where it stands in words; (None, None) when
    it does not read exactly one."""
    if isinstance(value, cst.Subscript):
        found = _entry(script, value)
        if found is not None:
            return found, f"{_code(value)} on line {script.line(found)}"
        return None, None
    if isinstance(value, cst.Attribute):
        found = _attribute(script, value)
        if found is not None:
            return found, f"{_code(value)} on line {script.line(found)}"
    return None, None


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _dict_of(script: Script, node: cst.BaseExpression) -> cst.Dict | None:
    """The dict literal ``node`` is: itself, a module constant's, or an entry of one."""
    if isinstance(node, cst.Dict):
        return node
    if isinstance(node, cst.Name):
        assign = script.module_assignment(node.value)
        return assign.value if assign is not None and isinstance(assign.value, cst.Dict) else None
    if isinstance(node, cst.Subscript):
        inner = _entry_value(script, node)
        return inner if isinstance(inner, cst.Dict) else None
    return None


def _entry_value(script: Script, subscript: cst.Subscript) -> cst.BaseExpression | None:
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    key = subscript.slice[0].slice.value
    if not isinstance(key, cst.SimpleString):
        return None
    table = _dict_of(script, subscript.value)
    if table is None:
        return None
    for element in table.elements:
        if (
            isinstance(element, cst.DictElement)
            and isinstance(element.key, cst.SimpleString)
            and element.key.evaluated_value == key.evaluated_value
        ):
            return element.value
    return None


def _entry(script: Script, subscript: cst.Subscript) -> cst.BaseExpression | None:
    found = _entry_value(script, subscript)
    return found if found is not None and number(found) is not None else None


def _attribute(script: Script, attribute: cst.Attribute) -> cst.BaseExpression | None:
    """``x.name``: the one number literal a class attribute ``name`` or a keyword ``name=`` of
    a call that is not an optimizer's holds in the script."""
    name = attribute.attr.value
    found: list[cst.BaseExpression] = []
    for node in script.nodes((cst.Assign, cst.AnnAssign)):
        if not isinstance(script.parent(script.parent(script.parent(node))), cst.ClassDef):
            continue
        targets = (
            [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        )
        if node.value is not None and any(dotted(t) == name for t in targets):
            found.append(node.value)
    optimizers = {id(c) for c in script.optimizer_calls()}
    for call in script.nodes(cst.Call):
        if id(call) in optimizers:
            continue
        found += [a.value for a in call.args if a.keyword is not None and a.keyword.value == name]
    numbers = [node for node in found if number(node) is not None]
    return numbers[0] if len(numbers) == 1 and len(found) == 1 else None
