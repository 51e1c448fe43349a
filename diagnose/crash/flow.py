"""Reading a block of the user's source for how names flow through it: which names a loop
carries from one iteration to the next, and which statements bind or read a name.

Pure functions of the AST; the live values come from the frame that ran the block.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator


def enclosing_loop(tree: ast.AST, line: int) -> ast.For | ast.While | None:
    """The innermost loop whose body covers ``line``, in the function that holds it."""
    best: ast.For | ast.While | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.While) and node.body:
            start = node.body[0].lineno
            end = node.end_lineno or node.lineno
            if start <= line <= end and (best is None or node.lineno > best.lineno):
                best = node
    return best


def _names(node: ast.AST, kind: type) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, kind)]


def reads_and_writes(stmt: ast.stmt) -> tuple[list[str], list[str]]:
    """The names a statement reads (before it binds anything) and the names it binds."""
    if isinstance(stmt, ast.Assign):
        return _names(stmt.value, ast.Load), [n for t in stmt.targets for n in _names(t, ast.Store)]
    if isinstance(stmt, ast.AugAssign):
        target = _names(stmt.target, ast.Store)
        return target + _names(stmt.value, ast.Load), target
    if isinstance(stmt, ast.AnnAssign):
        value = _names(stmt.value, ast.Load) if stmt.value is not None else []
        return value, _names(stmt.target, ast.Store)
    return _names(stmt, ast.Load), _names(stmt, ast.Store)


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The simple statements of a block in the order they run, nested blocks flattened."""
    for stmt in body:
        if isinstance(stmt, ast.If | ast.With | ast.Try | ast.For | ast.While):
            if isinstance(stmt, ast.With):
                yield from statements(stmt.body)
            elif isinstance(stmt, ast.If):
                yield from statements(stmt.body + stmt.orelse)
            elif isinstance(stmt, ast.Try):
                yield from statements(stmt.body)
            else:
                yield from statements(stmt.body)
        else:
            yield stmt


def carried(loop: ast.For | ast.While) -> dict[str, ast.stmt]:
    """Names read in the loop's body before the body binds them, and bound later in it:
    what one iteration hands the next. Each with the statement that first reads it."""
    loop_vars = set(_names(loop.target, ast.Store)) if isinstance(loop, ast.For) else set()
    bound: set[str] = set()
    first_read: dict[str, ast.stmt] = {}
    for stmt in statements(loop.body):
        reads, writes = reads_and_writes(stmt)
        for name in reads:
            if name not in bound and name not in loop_vars:
                first_read.setdefault(name, stmt)
        bound.update(writes)
    return {name: stmt for name, stmt in first_read.items() if name in bound}


def read_only(loop: ast.For | ast.While) -> set[str]:
    """Names the loop's body reads and never binds."""
    loop_vars = set(_names(loop.target, ast.Store)) if isinstance(loop, ast.For) else set()
    reads: set[str] = set()
    bound: set[str] = set()
    for stmt in statements(loop.body):
        r, w = reads_and_writes(stmt)
        reads.update(r)
        bound.update(w)
    return reads - bound - loop_vars


def backward_calls(body: list[ast.stmt]) -> list[int]:
    """Lines of ``.backward(...)`` calls in a block."""
    return sorted(
        n.lineno
        for stmt in body
        for n in ast.walk(stmt)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "backward"
    )


def backward_receiver(stmt: ast.stmt) -> str | None:
    """``loss`` for ``loss.backward()`` or ``torch.autograd.backward(loss)`` in ``stmt``."""
    for n in ast.walk(stmt):
        if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute):
            continue
        if n.func.attr == "backward" and isinstance(n.func.value, ast.Name):
            return n.func.value.id
        if n.func.attr == "backward" and n.args and isinstance(n.args[0], ast.Name):
            return n.args[0].id
    return None
