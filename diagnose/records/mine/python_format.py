"""A Python message expression -> its pieces: the format string as the source spells it.

Covered: string literals (implicit concatenation across lines is one literal in ``ast``),
f-strings (each ``{...}`` a hole; ``{x=}`` keeps its ``x=``), ``"..." % args`` (printf
directives, ``%%``, ``%(name)s``), ``"...".format(...)`` (``{}``, ``{0}``, ``{name!r:>5}``,
``{{``), ``+`` between any of those and other expressions, and a local name assigned exactly
once before the site (``msg = f"..."; raise ValueError(msg)``). Anything else is one hole:
the value is not known from the source, and nothing about it is guessed.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Callable

from diagnose.records.mine.pieces import Hole, HoleKind, Lit, Pieces, hole, joined

# printf directive: %[(name)][flags][width][.precision][length]type
_PRINTF = re.compile(
    r"%(?:\((?P<name>[^)]*)\))?(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?"
    r"[hlL]?(?P<type>[diouxXeEfFgGcrsa%])"
)
MAX_DEPTH = 20  # nested concatenations / name lookups followed, at most

Resolver = Callable[[str, int], ast.expr | None]


def _no_names(_name: str, _line: int) -> ast.expr | None:
    return None


def _unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - malformed trees only
        return "..."


def _spec_kind(spec: str) -> HoleKind:
    """``int`` only for a plain ``d`` spec: it always renders as digits with an optional sign."""
    return "int" if spec == "d" else "any"


def message_pieces(node: ast.expr, resolve: Resolver = _no_names, depth: int = 0) -> Pieces:
    """The pieces of the message ``node`` evaluates to (a hole for anything not spelled out).

    ``resolve(name, line)`` returns the one expression a local name was assigned before
    ``line``, or None.
    """
    if depth > MAX_DEPTH:
        return (hole(_unparse(node)),)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            return joined([Lit(node.value)])
        return (hole(_unparse(node)),)
    if isinstance(node, ast.JoinedStr):
        return _fstring(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = message_pieces(node.left, resolve, depth + 1)
        right = message_pieces(node.right, resolve, depth + 1)
        return joined([left, right])
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
    ):
        return printf_pieces(node.left.value, node.right) or (hole(_unparse(node)),)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return format_pieces(node.func.value.value, node) or (hole(_unparse(node)),)
    if isinstance(node, ast.Name):
        value = resolve(node.id, node.lineno)
        if value is not None:
            return message_pieces(value, resolve, depth + 1)
    return (hole(_unparse(node)),)


def _fstring(node: ast.JoinedStr) -> Pieces:
    parts: list[Lit | Hole] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(Lit(value.value))
        elif isinstance(value, ast.FormattedValue):
            spec = value.format_spec
            kind: HoleKind = "any"
            if value.conversion == -1 and spec is None:
                kind = "any"
            elif value.conversion == -1 and isinstance(spec, ast.JoinedStr):
                texts = [v.value for v in spec.values if isinstance(v, ast.Constant)]
                if len(texts) == len(spec.values):
                    kind = _spec_kind("".join(str(t) for t in texts))
            parts.append(hole(_unparse(value.value), kind))
        else:  # pragma: no cover - ast only puts those two in a JoinedStr
            parts.append(hole(_unparse(value)))
    return joined(parts)


def _printf_args(right: ast.expr) -> tuple[list[ast.expr] | None, dict[str, ast.expr] | None]:
    if isinstance(right, ast.Tuple):
        return list(right.elts), None
    if isinstance(right, ast.Dict):
        named = {
            k.value: v
            for k, v in zip(right.keys, right.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        }
        return None, named
    return [right], None


def printf_pieces(
    fmt: str, right: ast.expr | None, args: list[ast.expr] | None = None
) -> Pieces | None:
    """``fmt % right`` (or logging's ``fmt, *args``) as pieces; None when ``fmt`` is not a
    valid printf format (Python would raise, so the site never shows that message)."""
    if args is None:
        positional, named = _printf_args(right) if right is not None else ([], None)
    else:
        positional, named = args, None
    parts: list[Lit | Hole] = []
    at = 0
    k = 0
    for m in _PRINTF.finditer(fmt):
        between = fmt[at : m.start()]
        if "%" in between:
            return None  # a '%' that starts no valid directive
        parts.append(Lit(between))
        at = m.end()
        kind = m.group("type")
        if kind == "%":
            parts.append(Lit("%"))
            continue
        for star in (m.group("width"), m.group("prec")):
            if star == "*":
                k += 1  # '*' takes a value from the arguments
        name = m.group("name")
        if name is not None:
            source = _unparse(named[name]) if named and name in named else name
        elif positional is not None and k < len(positional):
            source = _unparse(positional[k])
        else:
            source = f"%{kind}"
        k += 1
        plain = not m.group("flags") and not m.group("width") and not m.group("prec")
        parts.append(hole(source, "int" if kind in "diu" and plain else "any"))
    if "%" in fmt[at:]:
        return None
    parts.append(Lit(fmt[at:]))
    return joined(parts)


def format_pieces(fmt: str, call: ast.Call | None = None) -> Pieces | None:
    """``fmt.format(...)`` as pieces; None when ``fmt`` is not a valid format string."""
    positional = list(call.args) if call is not None else []
    named = {kw.arg: kw.value for kw in call.keywords if kw.arg} if call is not None else {}
    parts: list[Lit | Hole] = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return None
    heads = [re.match(r"[^.\[]*", f).group() for _, f, _, _ in parsed if f is not None]  # type: ignore[union-attr]
    if "" in heads and any(h.isdigit() for h in heads):
        return None  # "{} {0}": Python raises instead of formatting
    for literal, field, spec, conversion in parsed:
        parts.append(Lit(literal))
        if field is None:
            continue
        source = field or f"{{{auto}}}"
        head = re.match(r"[^.\[]*", field).group()  # type: ignore[union-attr]
        if head == "":
            if auto < len(positional):
                source = _unparse(positional[auto]) + field
            auto += 1
        elif head.isdigit() and int(head) < len(positional):
            source = _unparse(positional[int(head)]) + field[len(head) :]
        elif head in named:
            source = _unparse(named[head]) + field[len(head) :]
        kind: HoleKind = "any"
        if conversion is None and spec is not None and "{" not in spec:
            kind = _spec_kind(spec)
        parts.append(hole(source, kind))
    return joined(parts)


__all__ = ["Hole", "Lit", "format_pieces", "message_pieces", "printf_pieces"]
