"""Which parameter of an op each tensor input was passed as: ``input``, ``weight``, ``bias``,
``target``, ``other`` -- so that an event's numbers say whose they are.

The names come from the op itself, never from a table kept here: a Python function's
signature (``F.mse_loss(input, target, ...)``), else the ATen schema of the op's name
(``aten::linear(Tensor input, Tensor weight, Tensor? bias)``), whose ``self`` is the op's
``input``. An op with neither (a user's own autograd Function) keeps no names.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

_PATH = re.compile(r"x\[(?:0\]\[(?P<index>\d+)\]|1\]\.(?P<key>[A-Za-z_]\w*))(?P<rest>.*)")


def operand_names(func: Any, op: str, paths: Sequence[str], positional: int) -> list[str | None]:
    """The parameter name of each tensor input, by its path in ``(args, kwargs)`` as
    ``iter_tensors(..., "x")`` writes it ("x[0][1]": the second positional argument,
    "x[1].weight": the keyword ``weight``); None where it cannot be told."""
    names = None if _reflected(op) else _parameters(func, op, positional)
    out: list[str | None] = []
    for path in paths:
        match = _PATH.fullmatch(path)
        if match is None:
            out.append(None)
            continue
        if match["key"] is not None:
            name: str | None = match["key"]
        else:
            index = int(match["index"])
            name = names[index] if names is not None and index < len(names) else None
        if name is not None and match["rest"]:
            name += match["rest"]  # a tensor inside a list argument: "tensors[1]"
        out.append(name)
    return out


def _parameters(func: Any, op: str, positional: int) -> list[str] | None:
    """The op's positional parameter names, from its signature or its ATen schema."""
    names = _signature_names(func)
    if names is None or len(names) < positional:
        names = _schema_names(_aten_name(op), positional)
    return names


def _signature_names(func: Any) -> list[str] | None:
    if not callable(func):
        return None
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a text signature
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in signature.parameters.values() if p.kind in kinds]
    return [_role(n) for n in names] or None


def _reflected(op: str) -> bool:
    """``__rtruediv__``: its ``self`` is the right-hand operand, not the op's input."""
    return op.startswith("__r") and op != "__rshift__"


def _aten_name(op: str) -> str:
    """``__mul__`` -> ``mul``, ``add_`` -> ``add``: the ATen operator a name stands for."""
    return op.strip("_") if op.startswith("__") else op.rstrip("_")


@functools.lru_cache(maxsize=512)
def _schema_names(op: str, positional: int) -> list[str] | None:
    """The first overload of ``aten::op`` with room for ``positional`` arguments."""
    schemas = _schemas(op)
    for schema in schemas:
        names = [a.name for a in schema.arguments if not a.kwarg_only]
        if len(names) >= positional:
            return [_role(n) for n in names]
    return None


def _schemas(op: str) -> list[Any]:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", op):
        return []
    import torch

    get: Callable[[str], list[Any]] | None = getattr(
        torch._C, "_jit_get_schemas_for_operator", None
    )
    if get is None:
        return []
    try:
        return list(get(f"aten::{op}"))
    except RuntimeError:
        return []


def _role(name: str) -> str:
    """ATen's ``self`` is the op's input."""
    return "input" if name == "self" else name
