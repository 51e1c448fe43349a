"""The script being patched: its libcst tree with positions, lookups and a node-level editor.

Every patch kind reads the script through a ``Script`` (find the optimizer construction, the
``backward()`` calls, the nodes on the event's line...) and writes through an ``Edit`` (replace
nodes, insert statements before or after others). Edits work on the concrete syntax tree, so
formatting and comments outside the edited nodes stay byte for byte as they were.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

OPTIMIZERS = frozenset(
    {
        "SGD",
        "Adam",
        "AdamW",
        "Adamax",
        "NAdam",
        "RAdam",
        "RMSprop",
        "Adagrad",
        "Adadelta",
        "ASGD",
        "Rprop",
        "LBFGS",
        "SparseAdam",
        "Adafactor",
        "Muon",
    }
)


class NoPatch(Exception):
    """A patch cannot be made; the message says why, in words for the user."""


def code_of(node: cst.CSTNode) -> str:
    """The source text of one expression or statement node."""
    return cst.Module(body=[]).code_for_node(node)


def dotted(node: cst.CSTNode) -> str | None:
    """``torch.optim.SGD`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def number(node: cst.CSTNode) -> float | None:
    """The value of a numeric literal (with an optional minus sign), else None."""
    if isinstance(node, cst.Integer | cst.Float):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return None if inner is None else -inner
    return None


def format_number(value: float) -> str:
    """A short literal for ``value``: 0.2, 0.002, 1e-05 -> 1e-5."""
    text = f"{value:.3g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    elif "." not in text:
        text += ".0"
    return text


@dataclass
class Script:
    """A parsed script with position and parent lookups."""

    path: str
    source: str
    wrapper: MetadataWrapper = field(init=False)
    module: cst.Module = field(init=False)

    def __post_init__(self) -> None:
        try:
            parsed = cst.parse_module(self.source)
        except cst.ParserSyntaxError as exc:
            raise NoPatch(
                f"the script does not parse ({exc.message} at line {exc.raw_line})"
            ) from None
        self.wrapper = MetadataWrapper(parsed)
        self.module = self.wrapper.module
        self._positions = self.wrapper.resolve(PositionProvider)
        self._parents = self.wrapper.resolve(ParentNodeProvider)

    # -- lookups ------------------------------------------------------------------------------
    def nodes(self, kind: type[cst.CSTNode] | tuple[type[cst.CSTNode], ...]) -> Iterator:
        """Every node of ``kind``, in source order."""
        for node in self._positions:
            if isinstance(node, kind):
                yield node

    def line(self, node: cst.CSTNode) -> int:
        return self._positions[node].start.line

    def lines(self, node: cst.CSTNode) -> range:
        pos = self._positions[node]
        return range(pos.start.line, pos.end.line + 1)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent(node)
        while current is not None:
            yield current
            current = self.parent(current)

    def statement_of(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The statement line that holds ``node`` (where new statements can go beside it)."""
        for ancestor in (node, *self.ancestors(node)):
            if isinstance(ancestor, cst.SimpleStatementLine):
                return ancestor
        return None

    def small_statement_of(self, node: cst.CSTNode) -> cst.BaseSmallStatement | None:
        """The simple statement that holds ``node``, wherever it stands: alone on its line,
        joined to others by ``;``, or the one-line body of an ``if``/``for``/``with``."""
        for ancestor in (node, *self.ancestors(node)):
            if isinstance(ancestor, cst.BaseSmallStatement):
                return ancestor
        return None

    def is_own_statement(self, call: cst.Call) -> bool:
        """True for a method call that is a whole simple statement (``loss.backward()``),
        whatever the layout around it (``opt.zero_grad(); loss.backward()`` included)."""
        small = self.small_statement_of(call)
        return (
            isinstance(small, cst.Expr)
            and small.value is call
            and isinstance(call.func, cst.Attribute)
        )

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The function (or lambda, or class) whose body holds ``node``; the module if none."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.FunctionDef | cst.Lambda | cst.ClassDef):
                return ancestor
        return self.module

    def loop_of(self, node: cst.CSTNode) -> cst.For | cst.While | None:
        """The innermost loop around ``node`` in its own scope (a loop around the function
        that holds ``node`` does not run it once per iteration, so it does not count)."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.For | cst.While):
                return ancestor
            if isinstance(ancestor, cst.FunctionDef | cst.Lambda | cst.ClassDef):
                return None
        return None

    def calls(self, *names: str) -> list[cst.Call]:
        """Calls whose callee's last name is one of ``names`` (``torch.log``, ``x.log``)."""
        found = []
        for call in self.nodes(cst.Call):
            func = call.func
            last = (
                func.attr.value
                if isinstance(func, cst.Attribute)
                else (func.value if isinstance(func, cst.Name) else None)
            )
            if last in names:
                found.append(call)
        return found

    def nodes_named_like(self, fragment: str) -> list[cst.CSTNode]:
        """Names and attributes whose dotted spelling contains ``fragment``."""
        return [
            n
            for n in self.nodes((cst.Attribute, cst.ImportFrom))
            if fragment in (dotted(n if isinstance(n, cst.Attribute) else n.module) or "")
        ]

    def optimizer_calls(self) -> list[cst.Call]:
        """Constructions of torch optimizers (``torch.optim.Adam(...)``, ``optim.SGD(...)``)."""
        return [
            c
            for c in self.nodes(cst.Call)
            if (name := dotted(c.func)) and name.split(".")[-1] in OPTIMIZERS
        ]

    def assigned_name(self, call: cst.CSTNode) -> str | None:
        """``opt`` for ``opt = torch.optim.SGD(...)`` (the name the call's value is bound to)."""
        parent = self.parent(call)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            return dotted(parent.targets[0].target)
        if isinstance(parent, cst.AnnAssign):
            return dotted(parent.target)
        return None

    def module_assignment(self, name: str) -> cst.Assign | None:
        """The single ``NAME = ...`` assignment at module level, if there is exactly one."""
        found = []
        for stmt in self.module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name
                        for t in small.targets
                    ):
                        found.append(small)
        return found[0] if len(found) == 1 else None

    def imports_torch_as(self) -> str | None:
        """How the script can spell ``torch`` (``torch`` for ``import torch``), else None."""
        for node in self.nodes(cst.Import):
            for alias in node.names:
                if dotted(alias.name) and dotted(alias.name).split(".")[0] == "torch":
                    if alias.asname is None:
                        return "torch"
                    if dotted(alias.name) == "torch":
                        return alias.asname.name.value
        return None

    def keyword(self, call: cst.Call, name: str) -> cst.Arg | None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg
        return None

    def argument(self, call: cst.Call, position: int, *names: str) -> cst.BaseExpression | None:
        """The value of a call's argument given by keyword (any of ``names``) or, else, at
        ``position`` among its positional arguments."""
        for name in names:
            arg = self.keyword(call, name)
            if arg is not None:
                return arg.value
        positional = [a for a in call.args if a.keyword is None and not a.star]
        return positional[position].value if position < len(positional) else None

    def on_line(self, line: int, kind: type[cst.CSTNode] | tuple = cst.CSTNode) -> list:
        """Nodes of ``kind`` whose span includes ``line``, innermost last."""
        return [n for n in self.nodes(kind) if line in self.lines(n)]


def with_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    """``call`` with ``name=value`` appended to its arguments, in the call's own layout: a
    trailing comma (and the line break before the closing parenthesis) stays at the end."""
    no_space = cst.SimpleWhitespace("")
    added = cst.Arg(
        keyword=cst.Name(name),
        value=cst.parse_expression(value),
        equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[added])
    last, between = args[-1], cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
        between = args[-2].comma
    args[-1] = last.with_changes(comma=between)
    return call.with_changes(args=[*args, added.with_changes(comma=last.comma)])


class Edit(cst.CSTTransformer):
    """Replacements and insertions keyed by the original nodes of one ``Script``."""

    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script
        self._replace: dict[int, cst.CSTNode] = {}
        self._before: dict[int, list[cst.BaseStatement]] = {}
        self._after: dict[int, list[cst.BaseStatement]] = {}
        self._first_in_body: dict[int, list[cst.BaseStatement]] = {}
        self._removed: set[int] = set()
        # the original lines each edit may change: make_patch checks the diff against them
        self.declared: list[range] = []

    def replace(self, node: cst.CSTNode, new: cst.CSTNode | str) -> None:
        if isinstance(new, str):
            new = cst.parse_expression(new)
        self._replace[id(node)] = new
        self.declared.append(self.script.lines(node))

    def insert_before(self, stmt: cst.CSTNode, *code: str) -> None:
        """New statements just before ``stmt``: a statement line, a compound statement, or a
        simple statement anywhere (joined with ``;`` when it shares its line)."""
        anchor = self._anchor(stmt)
        self._before.setdefault(id(anchor), []).extend(_statements(code, anchor))

    def insert_after(self, stmt: cst.CSTNode, *code: str) -> None:
        """New statements just after ``stmt`` (see ``insert_before``)."""
        anchor = self._anchor(stmt)
        self._after.setdefault(id(anchor), []).extend(_statements(code, anchor))

    def remove(self, stmt: cst.CSTNode) -> None:
        """Leave out a whole statement line of a block (one moved elsewhere with
        ``insert_before`` / ``insert_after``)."""
        self._removed.add(id(stmt))
        self.declared.append(self.script.lines(stmt))

    def insert_first(self, block_owner: cst.CSTNode, *code: str) -> None:
        """Insert at the top of a compound statement's body (a ``for`` loop's, say); a
        one-line body (``for x in xs: f(x)``) becomes an indented block."""
        self._first_in_body[id(block_owner)] = _statements(code, None)
        body = block_owner.body  # type: ignore[attr-defined]
        first = body.body[0] if isinstance(body, cst.IndentedBlock) and body.body else body
        self.declared.append(
            range(self.script.line(block_owner), self.script.lines(first).start + 1)
        )

    def _anchor(self, node: cst.CSTNode) -> cst.CSTNode:
        """Where statements go beside ``node``: its whole line when it stands alone there."""
        self.declared.append(self.script.lines(node))
        parent = self.script.parent(node)
        if isinstance(node, cst.BaseSmallStatement) and (
            isinstance(parent, cst.SimpleStatementLine) and len(parent.body) == 1
        ):
            return parent
        return node

    @property
    def empty(self) -> bool:
        return not (
            self._replace or self._before or self._after or self._first_in_body or self._removed
        )

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        new = self._replace.get(id(original_node))
        if new is not None:
            return new
        if isinstance(original_node, cst.Module | cst.IndentedBlock):
            updated_node = updated_node.with_changes(
                body=self._spliced(original_node.body, updated_node.body)
            )
        if isinstance(
            original_node, cst.SimpleStatementLine | cst.SimpleStatementSuite
        ) and self._splices(original_node.body):
            updated_node = updated_node.with_changes(
                body=_joined(self._spliced(original_node.body, updated_node.body))
            )
        first = self._first_in_body.get(id(original_node))
        if first is not None:
            updated_node = updated_node.with_changes(body=_prepended(updated_node.body, first))
        return updated_node

    def _splices(self, original: Sequence) -> bool:
        return any(id(n) in self._before or id(n) in self._after for n in original)

    def _spliced(self, original: Sequence, updated: Sequence) -> list:
        out: list = []
        for orig, upd in zip(original, updated, strict=True):
            out.extend(self._before.get(id(orig), []))
            if id(orig) not in self._removed:
                out.append(upd)
            out.extend(self._after.get(id(orig), []))
        return out

    def result(self) -> str:
        if self.empty:
            raise NoPatch("nothing to change")
        return self.script.module.visit(self).code


def _statements(code: Sequence[str], anchor: cst.CSTNode | None) -> list:
    """``code`` parsed as statements; beside a simple statement that shares its line, as
    simple statements (``a(); new(); b()``), which then must be simple."""
    parsed = [cst.parse_statement(line if line.endswith("\n") else line + "\n") for line in code]
    if not isinstance(anchor, cst.BaseSmallStatement):
        return parsed
    small: list = []
    for stmt in parsed:
        if not isinstance(stmt, cst.SimpleStatementLine):
            raise NoPatch(f"`{code_of(stmt).strip()}` cannot join a line of `;`-joined statements")
        small.extend(stmt.body)
    return small


_SEMICOLON = cst.Semicolon(
    whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(" ")
)


def _joined(body: list) -> list:
    """Simple statements of one line, each but the last followed by ``; ``."""
    out = [
        small
        if small.semicolon is not cst.MaybeSentinel.DEFAULT
        else small.with_changes(semicolon=_SEMICOLON)
        for small in body[:-1]
    ]
    return [*out, body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)] if body else out


def _prepended(body: cst.BaseSuite, first: list) -> cst.IndentedBlock:
    """``first`` at the top of ``body``, a one-line body turned into an indented block."""
    if isinstance(body, cst.IndentedBlock):
        return body.with_changes(body=[*first, *body.body])
    assert isinstance(body, cst.SimpleStatementSuite)
    rest = cst.SimpleStatementLine(
        body=_joined(list(body.body)), trailing_whitespace=body.trailing_whitespace
    )
    return cst.IndentedBlock(body=[*first, rest])


def unified_diff(old: str, new: str, name: str) -> str:
    """A ``git apply``-able unified diff of one file (``a/NAME`` -> ``b/NAME``). An absolute
    ``NAME`` (a config file outside the working directory) is headed ``a/abs/path``, which
    ``patch -p1`` applies from ``/``, not ``a//abs/path``."""
    name = name.lstrip("/")
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )
