"""Error and warning sites of one C/C++/CUDA file: torch's check macros and plain throws.

Read with ``cpp_lexer`` (tokens, not a parse). A macro name followed by ``(`` is a call; its
arguments are split at top-level commas (``( [ {`` nest; ``<`` does not, since it is far more
often a comparison than a template). Each message argument is streamed by ``c10::str``
with no separator, so every argument is one piece: string literals (adjacent ones joined,
escapes decoded) are literal text, anything else a hole; ``+`` between std::strings,
``c10::str(...)``, ``std::string("...")`` and ``fmt::format("...{}...", ...)`` inside an
argument are read through.

The message of each macro is what ``c10/util/Exception.h`` builds:

- ``TORCH_CHECK(cond, ...)``, ``_VALUE``/``_INDEX``/``_TYPE``/``_NOT_IMPLEMENTED``/``_LINALG``,
  ``TORCH_CHECK_WITH(Type, cond, ...)``, ``AT_ERROR(...)``, ``TORCH_CHECK_ARG(cond, n, ...)``:
  the pieces; without any, ``Expected <cond> to be true, but got false.  (Could this ...)``
  with ``#cond`` as the preprocessor spells it.
- ``TORCH_INTERNAL_ASSERT(cond, ...)`` and ``AT_ASSERT``: ``<cond> INTERNAL ASSERT FAILED at
  "<__FILE__>":<line>, please report a bug to PyTorch. `` then the pieces (``__FILE__`` is the
  build's path, so only its file name is literal). ``_DEBUG_ONLY`` is compiled out of release
  builds and is not a site.
- ``C10_THROW_ERROR(Type, msg)``, ``TORCH_WARN(...)``, ``TORCH_WARN_ONCE(...)``,
  ``TORCH_WARN_DEPRECATION(...)``, ``throw std::runtime_error(msg)``.

The Python class each C++ error type becomes is torch's mapping (``torch/csrc/Exceptions.h``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from diagnose.records.mine.cpp_lexer import Source, Token
from diagnose.records.mine.pieces import Hole, Lit, Piece, Pieces, hole, joined
from diagnose.records.mine.python_format import format_pieces
from diagnose.records.mine.sites import Site

# c10 error type -> the Python exception torch raises for it
PYTHON_CLASS = {
    "Error": "RuntimeError",
    "ErrorAlwaysShowCppStacktrace": "RuntimeError",
    "EnforceFiniteError": "RuntimeError",
    "ValueError": "ValueError",
    "TypeError": "TypeError",
    "IndexError": "IndexError",
    "NotImplementedError": "NotImplementedError",
    "BufferError": "BufferError",
    "LinAlgError": "torch._C._LinAlgError",
    "OutOfMemoryError": "torch.OutOfMemoryError",
    "AcceleratorError": "torch.AcceleratorError",
    "DistError": "torch.distributed.DistError",
    "DistBackendError": "torch.distributed.DistBackendError",
    "DistNetworkError": "torch.distributed.DistNetworkError",
    "DistStoreError": "torch.distributed.DistStoreError",
}
DEFAULT_CHECK_TAIL = (
    " to be true, but got false.  (Could this error message be improved?  If so, "
    "please report an enhancement request to PyTorch.)"
)


@dataclass(frozen=True, slots=True)
class _Macro:
    """How a macro's arguments make the message: ``lead`` arguments come before the pieces
    (the error type when ``typed``, then the condition when ``cond``)."""

    error_class: str | None
    typed: bool = False
    cond: bool = True
    internal: bool = False
    warning: bool = False
    prefix: tuple[str, ...] = ()  # pieces the macro adds before the caller's (TORCH_CHECK_ARG)


MACROS = {
    "TORCH_CHECK": _Macro("RuntimeError"),
    "TORCH_CHECK_ALWAYS_SHOW_CPP_STACKTRACE": _Macro("RuntimeError"),
    "TORCH_CHECK_VALUE": _Macro("ValueError"),
    "TORCH_CHECK_INDEX": _Macro("IndexError"),
    "TORCH_CHECK_TYPE": _Macro("TypeError"),
    "TORCH_CHECK_NOT_IMPLEMENTED": _Macro("NotImplementedError"),
    "TORCH_CHECK_LINALG": _Macro("torch._C._LinAlgError"),
    "TORCH_CHECK_WITH": _Macro(None, typed=True),
    "TORCH_CHECK_ARG": _Macro("RuntimeError", prefix=("invalid argument ", "", ": ")),
    "AT_ERROR": _Macro("RuntimeError", cond=False),
    "TORCH_INTERNAL_ASSERT": _Macro("RuntimeError", internal=True),
    "AT_ASSERT": _Macro("RuntimeError", internal=True),
    "AT_ASSERTM": _Macro("RuntimeError", internal=True),
    "C10_THROW_ERROR": _Macro(None, typed=True, cond=False),
    "TORCH_WARN": _Macro("UserWarning", cond=False, warning=True),
    "TORCH_WARN_ONCE": _Macro("UserWarning", cond=False, warning=True),
    "TORCH_WARN_DEPRECATION": _Macro("DeprecationWarning", cond=False, warning=True),
}
_THROWN = {"runtime_error": "RuntimeError"}  # std:: types whose Python class is certain
_OPEN, _CLOSE = "([{", ")]}"
MAX_ARGS_TOKENS = 20_000  # a call longer than this is not a call (an unbalanced paren)


def _call_args(tokens: list[Token], open_at: int) -> tuple[list[list[int]], int] | None:
    """Argument token index lists of the call whose ``(`` is ``tokens[open_at]``, and the
    index of its ``)``; None when the parentheses never close (within the bound)."""
    depth = 0
    args: list[list[int]] = [[]]
    stop = min(len(tokens), open_at + MAX_ARGS_TOKENS)
    for i in range(open_at + 1, stop):
        tok = tokens[i]
        if tok.kind == "punct":
            if tok.text in _OPEN:
                depth += 1
            elif tok.text in _CLOSE:
                if depth == 0:
                    return ([] if args == [[]] else args), i
                depth -= 1
            elif tok.text == "," and depth == 0:
                args.append([])
                continue
        args[-1].append(i)
    return None


class _Reader:
    """Turns argument tokens into pieces and source text."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.tokens = source.tokens

    def text(self, idx: list[int]) -> str:
        if not idx:
            return ""
        return self.source.text[self.tokens[idx[0]].start : self.tokens[idx[-1]].end]

    def stringized(self, idx: list[int]) -> str:
        """``#arg``: tokens as written, each run of blanks/comments one space; literals escaped."""
        out: list[str] = []
        for n, i in enumerate(idx):
            tok = self.tokens[i]
            if n and self.source.gaps[i]:
                out.append(" ")
            text = tok.text
            if tok.kind in ("str", "chr"):
                text = text.replace("\\", "\\\\").replace('"', '\\"')
            out.append(text)
        return "".join(out)

    def pieces(self, idx: list[int], depth: int = 0) -> Pieces:
        """The pieces one streamed argument contributes (see the module docstring)."""
        if not idx:
            return ()
        if depth > 10:
            return (hole(self.text(idx)),)
        operands = self._split(idx, "+")
        if len(operands) > 1 and any(self._is_literal(o) for o in operands):
            return joined(self.pieces(o, depth + 1) for o in operands)
        toks = [self.tokens[i] for i in idx]
        if all(t.kind in ("str", "ident") for t in toks) and any(t.kind == "str" for t in toks):
            # "a" "b" joined by the compiler, or "%" PRId64-style macros between literals
            return joined(Lit(t.value or "") if t.kind == "str" else hole(t.text) for t in toks)
        call = self._call(idx)
        if call is not None:
            name, args = call
            if name in ("c10::str", "::c10::str", "str"):
                return joined(self.pieces(a, depth + 1) for a in args)
            if name in ("std::string", "::std::string") and len(args) == 1:
                return self.pieces(args[0], depth + 1)
            if name in ("fmt::format", "::fmt::format", "std::format") and args:
                fmt = self._literal(args[0])
                if fmt is not None:
                    formatted = format_pieces(fmt)
                    if formatted is not None:
                        return formatted
        return (hole(self.text(idx)),)

    def _split(self, idx: list[int], op: str) -> list[list[int]]:
        parts: list[list[int]] = [[]]
        depth = 0
        for i in idx:
            tok = self.tokens[i]
            if tok.kind == "punct":
                if tok.text in _OPEN:
                    depth += 1
                elif tok.text in _CLOSE:
                    depth -= 1
                elif tok.text == op and depth == 0 and parts[-1]:
                    parts.append([])
                    continue
                elif tok.text in ("?", ":") and depth == 0:
                    return [idx]  # a conditional: its value is one of two, not a sum
            parts[-1].append(i)
        return parts

    def _is_literal(self, idx: list[int]) -> bool:
        return bool(idx) and all(self.tokens[i].kind == "str" for i in idx)

    def _literal(self, idx: list[int]) -> str | None:
        return "".join(self.tokens[i].value or "" for i in idx) if self._is_literal(idx) else None

    def _call(self, idx: list[int]) -> tuple[str, list[list[int]]] | None:
        """``name(args)`` when the operand is exactly one call of a (qualified) name."""
        k = 0
        while k < len(idx) and (
            self.tokens[idx[k]].kind == "ident" or self.tokens[idx[k]].text == "::"
        ):
            k += 1
        if k == 0 or k >= len(idx) or self.tokens[idx[k]].text != "(":
            return None
        found = _call_args(self.tokens, idx[k])
        if found is None or found[1] != idx[-1]:
            return None
        return "".join(self.tokens[i].text for i in idx[:k]), found[0]


def _cpp_class(type_text: str) -> str | None:
    name = type_text.replace(" ", "").removeprefix("::").removeprefix("c10::")
    return PYTHON_CLASS.get(name)


def cpp_sites(source: Source, path: str) -> list[Site]:
    """Every check, error and warning site of the file, in source order."""
    return list(_sites(source, path))


def _sites(source: Source, path: str) -> Iterator[Site]:
    tokens = source.tokens
    reader = _Reader(source)
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or i + 1 >= len(tokens) or tokens[i + 1].text != "(":
            continue
        before = tokens[i - 1].text if i else ""
        if before in (".", "->"):
            continue  # a member function that happens to share the name
        macro = MACROS.get(tok.text)
        thrown = None
        if macro is None:
            if (
                before == "::"
                and i >= 3
                and tokens[i - 2].text == "std"
                and tokens[i - 3].text == "throw"
            ):
                thrown = tok.text
            else:
                continue
        found = _call_args(tokens, i + 1)
        if found is None:
            continue
        args, close = found
        line = source.line_of(tok.start)
        end_line = source.line_of(tokens[close].start)
        if any(tokens[k].text == "__VA_ARGS__" for arg in args for k in arg):
            yield _site(
                path,
                line,
                end_line,
                None,
                False,
                None,
                "in a macro definition: the message comes from the macro's arguments",
            )
            continue
        if thrown is not None:
            yield _site(
                path,
                line,
                end_line,
                _THROWN.get(thrown),
                False,
                reader.pieces(args[0]) if len(args) == 1 else None,
            )
            continue
        yield _macro_site(macro, args, reader, path, line, end_line)  # type: ignore[arg-type]


def _macro_site(
    macro: _Macro, args: list[list[int]], reader: _Reader, path: str, line: int, end_line: int
) -> Site:
    error_class = macro.error_class
    rest = args
    if macro.typed:
        if not rest:
            return _site(path, line, end_line, None, False, None, "no error type")
        error_class = _cpp_class(reader.text(rest[0]))
        rest = rest[1:]
    cond: list[int] | None = None
    if macro.cond:
        if not rest:
            return _site(path, line, end_line, error_class, macro.warning, None, "no condition")
        cond, rest = rest[0], rest[1:]
    parts: list[Piece | Pieces] = []
    if macro.prefix and rest:
        parts += [Lit(macro.prefix[0]), reader.pieces(rest[0]), Lit(macro.prefix[2])]
        rest = rest[1:]
    parts += [reader.pieces(arg) for arg in rest]
    pieces = joined(parts)
    if macro.internal:
        assert cond is not None
        where = (
            Lit(f'{reader.stringized(cond)} INTERNAL ASSERT FAILED at "'),
            Hole("build folder/"),
            Lit(f'{PurePosixPath(path).name}":'),
            Hole("__LINE__", "int"),
            Lit(", please report a bug to PyTorch. "),
        )
        pieces = joined([where, pieces])
    elif cond is not None and not rest:
        pieces = (Lit(f"Expected {reader.stringized(cond)}{DEFAULT_CHECK_TAIL}"),)
    elif not pieces:
        return _site(path, line, end_line, error_class, macro.warning, None, "no message")
    return _site(path, line, end_line, error_class, macro.warning, pieces)


def _site(
    path: str,
    line: int,
    end_line: int,
    error_class: str | None,
    warning: bool,
    pieces: Pieces | None,
    note: str | None = None,
) -> Site:
    return Site(
        path,
        "cpp",
        line,
        end_line,
        error_class,
        "warning" if warning else "exception",
        "warning" if warning else "error",
        pieces,
        note if pieces is None else None,
    )
