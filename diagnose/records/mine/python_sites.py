"""Raise, assert, warning and logging sites of one Python file, read with ``ast``.

Sites: ``raise X(msg)`` (also ``raise X(msg) from e``), ``assert cond, msg`` and
``torch._assert(cond, msg)`` (AssertionError), ``warnings.warn(msg, Category)`` (also ``warn``
imported from ``warnings``, and a Warning instance as the message), Lightning's
``rank_zero_warn(msg, category=...)`` (whose second positional argument is the stack level,
not the category), and, for ``kind="log"``,
``logger.warning/error/critical/exception(msg, *args)``. The message expression goes through
``python_format.message_pieces``; the class is the name as the source writes it
(``torch.OutOfMemoryError``), never looked up. A raised object that is not a class call
(``raise self._error(...)``, ``raise exc``) is a site without a message: what it says is not
in the source at that line.
"""

from __future__ import annotations

import ast
import re

from diagnose.records.mine.pieces import joined
from diagnose.records.mine.python_format import message_pieces, printf_pieces
from diagnose.records.mine.sites import Site, SiteKind

_CLASS_NAME = re.compile(r"_?[A-Z][A-Za-z0-9_]*")
_LOG_METHODS = {
    "warning": "warning",
    "warn": "warning",
    "warning_once": "warning",
    "error": "error",
    "critical": "error",
    "exception": "error",
    "fatal": "error",
}
_LOG_CALL = re.compile(r"\.(?:warning|warn|warning_once|error|critical|exception|fatal)\s*\(")
_LOGGER_NAME = re.compile(r"(?i).*log(?:ger)?$|logging")
_RANK_ZERO_WARN = "rank_zero_warn"  # lightning(_utilities): warnings.warn on global rank 0
_TORCH_ASSERTS = ("torch._assert",)  # raises AssertionError(message) when the condition is false
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def dotted(node: ast.expr) -> str | None:
    """``a.b.C`` for a Name/Attribute chain, else None."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return ".".join(reversed(names))


def _is_class(name: str | None) -> bool:
    return name is not None and _CLASS_NAME.fullmatch(name.rsplit(".", 1)[-1]) is not None


class _Scope:
    """The names a function (or the module) binds, to resolve ``raise X(msg)``'s ``msg``.

    A name resolves only when it is bound exactly once in the scope, by a plain assignment
    that comes before the site: then its value at the site is that expression, whatever path
    the code took. Any other binding (a loop, ``+=``, a second assignment, a parameter) makes
    the value depend on the run, so it stays a hole.
    """

    def __init__(self, node: ast.AST) -> None:
        self.stores: dict[str, int] = {}
        self.values: dict[str, tuple[int, ast.expr]] = {}
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for arg in ast.walk(node.args):
                if isinstance(arg, ast.arg):
                    self.stores[arg.arg] = self.stores.get(arg.arg, 0) + 2
        body = node.body if isinstance(node.body, list) else [node.body]
        for child in body:
            self._collect(child)

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                self.stores[node.name] = self.stores.get(node.name, 0) + 1
            return
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                self.values[targets[0].id] = (node.lineno, node.value)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            self.stores[node.id] = self.stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            for name in node.names:
                self.stores[name] = self.stores.get(name, 0) + 2
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.stores[node.name] = self.stores.get(node.name, 0) + 1
        for child in ast.iter_child_nodes(node):
            self._collect(child)

    def binds(self, name: str) -> bool:
        """Whether the scope binds ``name`` at all (else it is the enclosing module's)."""
        return name in self.stores

    def resolve(self, name: str, line: int) -> ast.expr | None:
        found = self.values.get(name)
        if found is None or self.stores.get(name) != 1 or found[0] >= line:
            return None
        return found[1]


class _Finder:
    """One pass over the tree with an explicit stack (``ast.NodeVisitor`` costs twice as
    much on big trees); each node is paired with its enclosing scope, whose bindings are only
    collected when a site there names a variable."""

    def __init__(self, path: str, kinds: frozenset[SiteKind]) -> None:
        self.path = path
        self.kinds = kinds
        self.sites: list[Site] = []
        self.warn_names: set[str] = set()  # local names of warnings.warn
        self._scopes: dict[int, _Scope] = {}
        self._scope_node: ast.AST | None = None
        self._module: ast.Module | None = None

    def run(self, tree: ast.Module, has_warn_import: bool, calls: bool) -> None:
        self._module = tree
        if has_warn_import:
            for child in ast.walk(tree):
                if isinstance(child, ast.ImportFrom) and child.module == "warnings":
                    for alias in child.names:
                        if alias.name == "warn":
                            self.warn_names.add(alias.asname or "warn")
        stack: list[tuple[ast.AST, ast.AST]] = [(tree, tree)]
        handlers = {
            ast.Raise: self.visit_Raise,
            ast.Assert: self.visit_Assert,
            ast.Call: self.visit_Call,
        }
        scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        # raise and assert are statements: without calls to look for, only bodies are walked
        fields = None if calls else _BODIES
        while stack:
            node, scope = stack.pop()
            kind = type(node)
            handler = handlers.get(kind)
            if handler is not None:
                self._scope_node = scope
                handler(node)  # type: ignore[operator]
            if kind in scopes:
                scope = node
            for name in fields if fields is not None else node._fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend((child, scope) for child in value if isinstance(child, ast.AST))
                elif isinstance(value, ast.AST) and name != "ctx":
                    stack.append((value, scope))

    def _resolve(self, name: str, line: int) -> ast.expr | None:
        """The expression ``name`` holds at ``line``: bound in the site's function, or, when
        the function never binds it, a module-level constant (``MSG = "..."`` above it)."""
        node = self._scope_node
        if node is None:
            return None
        scope = self._scope(node)
        if scope.binds(name) or self._module is None or node is self._module:
            return scope.resolve(name, line)
        return self._scope(self._module).resolve(name, line)

    def _scope(self, node: ast.AST) -> _Scope:
        scope = self._scopes.get(id(node))
        if scope is None:
            scope = self._scopes[id(node)] = _Scope(node)
            if isinstance(node, ast.Module):
                _count_global_rebinds(node, scope)
        return scope

    def _site(
        self,
        kind: SiteKind,
        node: ast.AST,
        cls: str | None,
        message: ast.expr | None,
        error_type: str,
        severity: str,
        note: str | None = None,
    ) -> None:
        pieces = None if message is None else message_pieces(message, self._resolve)
        self.sites.append(
            Site(
                self.path,
                kind,
                node.lineno,
                node.end_lineno or node.lineno,
                cls,
                error_type,
                severity,
                pieces,
                note if message is None else None,
                "repr" if cls is not None and cls.rsplit(".", 1)[-1] == "KeyError" else "str",
            )
        )

    def visit_Raise(self, node: ast.Raise) -> None:
        if "raise" not in self.kinds or node.exc is None:
            return  # a bare `raise` re-raises: no new message here
        exc = node.exc
        if isinstance(exc, ast.Call):
            name = dotted(exc.func)
            if not _is_class(name):
                self._site(
                    "raise",
                    node,
                    None,
                    None,
                    "exception",
                    "error",
                    f"raises what {name or 'a call'}(...) returns",
                )
                return
            message = _first_arg(exc, ("msg", "message"))
            if message is None:
                self._site("raise", node, name, None, "exception", "error", "no message")
            elif len(exc.args) > 1:
                self._site(
                    "raise",
                    node,
                    name,
                    None,
                    "exception",
                    "error",
                    "several arguments: the message is their tuple",
                )
            else:
                self._site("raise", node, name, message, "exception", "error")
            return
        name = dotted(exc)
        note = "no message" if _is_class(name) else "re-raises an exception object"
        self._site(
            "raise", node, name if _is_class(name) else None, None, "exception", "error", note
        )

    def visit_Assert(self, node: ast.Assert) -> None:
        if "raise" in self.kinds and node.msg is not None:
            self._site("raise", node, "AssertionError", node.msg, "exception", "error")

    def visit_Call(self, node: ast.Call) -> None:
        name = dotted(node.func)
        if name is None:
            return
        if "warn" in self.kinds and (name == "warnings.warn" or name in self.warn_names):
            self._warning(node)
        elif "warn" in self.kinds and name.rsplit(".", 1)[-1] == _RANK_ZERO_WARN:
            self._warning(node, positional_category=False)
        elif "raise" in self.kinds and name in _TORCH_ASSERTS:
            self._torch_assert(node)
        elif "log" in self.kinds and isinstance(node.func, ast.Attribute):
            level = _LOG_METHODS.get(node.func.attr)
            owner = dotted(node.func.value)
            if level and owner and _LOGGER_NAME.fullmatch(owner.rsplit(".", 1)[-1]):
                self._log(node, level)

    def _torch_assert(self, node: ast.Call) -> None:
        message = node.args[1] if len(node.args) > 1 else _keyword(node, "message")
        if isinstance(message, ast.Starred):
            message = None
        note = "no message" if message is None else None
        self._site("raise", node, "AssertionError", message, "exception", "error", note)

    def _warning(self, node: ast.Call, positional_category: bool = True) -> None:
        message = _first_arg(node, ("message",))
        if positional_category and len(node.args) > 1:
            category: ast.expr | None = node.args[1]
        else:
            category = _keyword(node, "category")
        cls = dotted(category) if category is not None else "UserWarning"
        if isinstance(message, ast.Call) and _is_class(dotted(message.func)):
            cls = dotted(message.func)  # warnings.warn(FutureWarning("..."))
            message = _first_arg(message, ("message",))
        if message is None:
            self._site("warn", node, cls, None, "warning", "warning", "no message")
        else:
            self._site("warn", node, cls, message, "warning", "warning")

    def _log(self, node: ast.Call, level: str) -> None:
        message = _first_arg(node, ("msg",))
        if message is None:
            return
        if (
            len(node.args) > 1
            and isinstance(message, ast.Constant)
            and isinstance(message.value, str)
        ):
            pieces = printf_pieces(message.value, None, list(node.args[1:]))
            if pieces is None:  # logging prints its own error instead of the message
                return
        else:
            pieces = message_pieces(message, self._resolve)
        self.sites.append(
            Site(
                self.path,
                "log",
                node.lineno,
                node.end_lineno or node.lineno,
                None,
                "log",
                level,
                joined([pieces]),
            )
        )


def _count_global_rebinds(tree: ast.Module, scope: _Scope) -> None:
    """Module names a function also binds have no single value a site can rely on.

    ``global NAME`` rebinds the module's; a function's own ``NAME`` may be the one an inner
    function's site reads (the finder only knows the innermost scope), so either way the
    name stays a hole.
    """
    functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
    for function in (n for n in ast.walk(tree) if isinstance(n, functions)):
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                names = node.names
            elif isinstance(node, ast.arg):
                names = [node.arg]
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names = [node.id]
            else:
                continue
            for name in names:
                scope.stores[name] = scope.stores.get(name, 0) + 2


def _first_arg(call: ast.Call, keywords: tuple[str, ...]) -> ast.expr | None:
    if call.args:
        first = call.args[0]
        return None if isinstance(first, ast.Starred) else first
    for name in keywords:
        value = _keyword(call, name)
        if value is not None:
            return value
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def python_sites(
    tree: ast.Module, path: str, kinds: frozenset[SiteKind], text: str | None = None
) -> list[Site]:
    """Every site of the kinds asked for in a parsed file, in source order.

    ``text``, the file's source, lets the walk skip what cannot be there: calls when it never
    says ``warn`` (nor, for logging, ``.warning(``-like calls), a local ``warn`` when it has no
    ``from warnings import``.
    """
    finder = _Finder(path, kinds)
    calls = (
        text is None
        or ("warn" in kinds and "warn" in text)
        or ("raise" in kinds and "_assert(" in text)
        or ("log" in kinds and _LOG_CALL.search(text) is not None)
    )
    finder.run(tree, text is None or "from warnings import" in text, calls)
    return sorted(finder.sites, key=lambda s: (s.line, s.end_line))
