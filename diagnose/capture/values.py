"""Turning live objects (tensors, enums, paths, tuples) into plain JSON values for the report."""

from __future__ import annotations

import enum
import math
import os
from typing import Any

_UNSAFE: Any = object()


def json_safe(value: Any, depth: int = 0) -> Any:
    """The value as plain JSON data, or ``UNSAFE`` when it has no faithful JSON form.

    Non-finite floats become the strings "inf", "-inf", "nan" (strict JSON has no such
    numbers); one-element tensors become numbers; enums their value; paths strings.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, enum.Enum):
        return json_safe(value.value, depth + 1)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if depth > 4:
        return _UNSAFE
    if isinstance(value, (list, tuple)):
        items = [json_safe(v, depth + 1) for v in value]
        return _UNSAFE if any(v is _UNSAFE for v in items) else items
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            safe = json_safe(v, depth + 1)
            if not isinstance(k, str) or safe is _UNSAFE:
                return _UNSAFE
            out[k] = safe
        return out
    number = to_float(value)
    return _UNSAFE if number is None else json_safe(number, depth + 1)


UNSAFE = _UNSAFE


def to_float(value: Any) -> float | None:
    """A Python float from a float, int or one-element tensor (a sync: call at snapshot only)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    numel = getattr(value, "numel", None)
    if callable(numel) and hasattr(value, "item"):
        try:
            if numel() == 1:
                return float(value.item())
        except Exception:
            return None
    return None


def dtype_name(dtype: Any) -> str:
    """``torch.float16`` -> ``"float16"``."""
    return str(dtype).removeprefix("torch.")


def pick(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The JSON-safe attributes ``names`` of ``obj`` (missing and unserialisable ones skipped)."""
    out: dict[str, Any] = {}
    for name in names:
        if not hasattr(obj, name):
            continue
        safe = json_safe(getattr(obj, name))
        if safe is not UNSAFE:
            out[name] = safe
    return out
