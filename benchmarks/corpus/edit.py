"""Edits of a libcst tree by node identity: replace, remove, insert before or after.

Operators find the nodes they act on in the original tree and say what each becomes; one pass
rebuilds the tree. Edited nodes must not nest (an outer edit would drop an inner one).
"""

from __future__ import annotations

import libcst as cst


class _Edits(cst.CSTTransformer):
    def __init__(self, edits: dict[int, object]) -> None:
        super().__init__()
        self.edits = edits
        self.done: set[int] = set()

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        key = id(original_node)
        if key not in self.edits:
            return updated_node
        self.done.add(key)
        edit = self.edits[key]
        return edit(updated_node) if callable(edit) else edit


class Editor:
    """Collects edits against one tree, then applies them all at once."""

    def __init__(self, tree: cst.Module) -> None:
        self.tree = tree
        self.edits: dict[int, object] = {}

    def replace(self, node: cst.CSTNode, new: object) -> Editor:
        """``new`` is a node, a ``cst.RemovalSentinel``, or a function of the updated node."""
        self.edits[id(node)] = new
        return self

    def remove(self, stmt: cst.BaseStatement) -> Editor:
        return self.replace(stmt, cst.RemovalSentinel.REMOVE)

    def insert_before(self, stmt: cst.BaseStatement, *code: str) -> Editor:
        return self.replace(stmt, lambda updated: cst.FlattenSentinel([*_lines(code), updated]))

    def insert_after(self, stmt: cst.BaseStatement, *code: str) -> Editor:
        return self.replace(stmt, lambda updated: cst.FlattenSentinel([updated, *_lines(code)]))

    def apply(self) -> str:
        transformer = _Edits(self.edits)
        code = self.tree.visit(transformer).code
        missing = set(self.edits) - transformer.done
        if missing:
            raise ValueError(f"{len(missing)} edit(s) did not reach their node")
        return code


def _lines(code: tuple[str, ...]) -> list[cst.BaseStatement]:
    return [stmt for text in code for stmt in cst.parse_module(text + "\n").body]


def expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)
