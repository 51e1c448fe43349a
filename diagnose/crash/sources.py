"""Reading the user's source for what the run pointed at: the constructor call a module was
built with, and whether an argument there is a plain number this fix may set.

Only literal arithmetic (``8 * 28 * 28``) counts as a number: a name or a call is the user's
own computation, and a patch would hide it.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterable
from dataclasses import dataclass

from diagnose.crash.live import parse, source_line
from diagnose.report import CrashSite

_OPS = {
    ast.Mult: operator.mul,
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}


def literal_int(node: ast.AST | None) -> int | None:
    """The integer of literal arithmetic, else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = literal_int(node.left), literal_int(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and right > 64):
            return None
        return int(_OPS[type(node.op)](left, right))
    if isinstance(node, ast.Tuple | ast.List) and len(node.elts) == 1:
        return literal_int(node.elts[0])
    return None


def factors(node: ast.AST) -> list[int] | None:
    """The literal factors of a product (``8 * 28 * 28`` -> [8, 28, 28]), else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = factors(node.left), factors(node.right)
        return None if left is None or right is None else left + right
    value = literal_int(node)
    return None if value is None or not isinstance(node, ast.Constant) else [value]


@dataclass
class Built:
    """A constructor call in the user's source: where, and its argument for one parameter."""

    file: str
    line: int
    code: str | None
    argument: ast.AST | None  # the expression given for the parameter in question
    assigned: str | None  # the attribute or name it is assigned to (fc, self.fc -> fc)

    def site(self, what: str) -> CrashSite:
        """This call as the crash's "built" site: where the module in question was built."""
        return CrashSite(role="built", file=self.file, line=self.line, code=self.code, what=what)


def _argument(call: ast.Call, position: int, name: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    positional = [a for a in call.args if not isinstance(a, ast.Starred)]
    return positional[position] if len(positional) > position else None


def _assigned_names(tree: ast.Module) -> dict[int, str]:
    names: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            target = node.targets[-1]
            if isinstance(target, ast.Attribute):
                names[id(node.value)] = target.attr
            elif isinstance(target, ast.Name):
                names[id(node.value)] = target.id
    return names


def constructors(
    files: Iterable[str],
    class_name: str,
    params: list[tuple[int, str, object]],
    position: int,
    name: str,
    last_name: str | None,
) -> list[Built]:
    """Calls of ``class_name(...)`` whose literal arguments agree with the module's values.

    ``params``: (position, keyword, the module's value) for each parameter to compare;
    ``position``/``name``: the parameter whose argument is returned. Calls assigned to an
    attribute named ``last_name`` are preferred when several agree.
    """
    found: list[Built] = []
    for file in dict.fromkeys(files):
        tree = parse(file)
        if tree is None:
            continue
        assigned = _assigned_names(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called != class_name:
                continue
            agrees = True
            for pos, key, value in params:
                given = literal_int(_argument(node, pos, key))
                if given is not None and given != value:
                    agrees = False
            if agrees:
                found.append(
                    Built(
                        file,
                        node.lineno,
                        source_line(file, node.lineno),
                        _argument(node, position, name),
                        assigned.get(id(node)),
                    )
                )
    if len(found) > 1 and last_name is not None:
        named = [b for b in found if b.assigned == last_name]
        if named:
            return named
    return found
