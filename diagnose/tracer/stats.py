"""Tensor statistics: the cheap device-side summaries kept per call, and their host form.

Per call only ``torch.aminmax`` runs (a few microseconds, no host synchronisation); the
results stay on the device until the step boundary reads them all at once. Full statistics
(non-zero |x| min, nan/inf counts) are computed only for the handful of tensors an event
points at, when the event is already known.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import torch

from diagnose.report import TensorStats

NEAR_LIMIT_FACTOR = 2.0


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_max(dtype: torch.dtype) -> float | None:
    """Largest finite value of a floating dtype; None for integer and bool dtypes."""
    if dtype.is_floating_point:
        return float(torch.finfo(dtype).max)
    return None


def local_tensor(t: torch.Tensor) -> torch.Tensor | None:
    """The plain tensor whose values can be reduced, or None when there are no values.

    Tensor subclasses such as DTensor are reduced over their local shard; meta tensors and
    empty tensors have nothing to reduce.
    """
    if type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
        to_local = getattr(t, "to_local", None)
        if callable(to_local):
            try:
                t = to_local()
            except Exception:
                return None
        if not isinstance(t, torch.Tensor):
            return None
    if t.is_meta or t.numel() == 0:
        return None
    return t


def shape_of(t: torch.Tensor) -> Any:
    """A tensor's shape; a nested (ragged) tensor has no single one, and gets ``()``."""
    return () if t.is_nested else t.shape


def is_checked(t: torch.Tensor) -> bool:
    """Only floating (and complex) tensors can hold inf or nan."""
    return t.is_floating_point() or t.is_complex()


def iter_tensors(obj: Any, prefix: str, depth: int = 0) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in a nested output: tuples, lists, dicts, dataclasses, ModelOutput.

    A nested (ragged) tensor is given as its packed values: most ops, ``isfinite`` and
    ``aminmax`` among them, do not run on the nested tensor itself.
    """
    if isinstance(obj, torch.Tensor):
        yield prefix, (obj.values() if obj.is_nested else obj)
        return
    if depth > 6 or obj is None or isinstance(obj, (str, bytes, int, float, bool)):
        return
    if isinstance(obj, dict):  # includes transformers ModelOutput (an OrderedDict)
        for key, value in obj.items():
            yield from iter_tensors(value, f"{prefix}.{key}", depth + 1)
    elif isinstance(obj, (tuple, list)):
        for i, value in enumerate(obj):
            yield from iter_tensors(value, f"{prefix}[{i}]", depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            yield from iter_tensors(
                getattr(obj, field.name, None), f"{prefix}.{field.name}", depth + 1
            )


def host_stats(name: str, dtype: torch.dtype, shape: Any, lo: float, hi: float) -> TensorStats:
    """TensorStats from an (amin, amax) pair read back from the device."""
    finite = math.isfinite(lo) and math.isfinite(hi)
    if finite:
        abs_max = max(abs(lo), abs(hi))
        abs_min = None if lo <= 0.0 <= hi else min(abs(lo), abs(hi))
    else:
        abs_max = math.nan if (math.isnan(lo) or math.isnan(hi)) else math.inf
        abs_min = None
    return _finish(name, dtype, list(shape), abs_min, abs_max, None, None)


def full_stats(name: str, t: torch.Tensor) -> TensorStats:
    """Complete statistics of one tensor (host synchronisation; used only at an event).

    Besides |x|, the signed finite ``min``/``max`` and the count of exact ``zeros`` are kept:
    they tell log/sqrt of a negative number from log/sqrt of 0. Integer tensors (targets,
    indices) get ``min``/``max``/``zeros`` too.
    """
    shape = list(t.shape)
    local = local_tensor(t)
    if local is None:
        return TensorStats(name=name, dtype=dtype_name(t.dtype), shape=shape)
    if not is_checked(local):
        if local.dtype == torch.bool:
            return TensorStats(name=name, dtype=dtype_name(t.dtype), shape=shape)
        with torch.no_grad():
            x = local.detach()
            lo, hi = (int(v) for v in torch.aminmax(x))
            zeros = int((x == 0).sum())
        return TensorStats(
            name=name, dtype=dtype_name(t.dtype), shape=shape, min=lo, max=hi, zeros=zeros
        )
    with torch.no_grad():
        x = local.detach()
        if x.is_complex():
            x = x.abs()
        x = x.float()
        nan = int(torch.isnan(x).sum())
        inf = int(torch.isinf(x).sum())
        zeros = int((x == 0).sum())
        a = x.abs()
        finite_mask = torch.isfinite(x)
        finite = a[finite_mask]
        nonzero = finite[finite > 0]
        abs_min = float(nonzero.min()) if nonzero.numel() else (0.0 if finite.numel() else None)
        signed = x[finite_mask]
        lo = float(signed.min()) if signed.numel() else None
        hi = float(signed.max()) if signed.numel() else None
        if nan:
            abs_max = math.nan
        elif inf:
            abs_max = math.inf
        else:
            abs_max = float(a.max())
    stats = _finish(name, t.dtype, shape, abs_min, abs_max, nan, inf)
    stats.min, stats.max, stats.zeros = lo, hi, zeros
    return stats


def _finish(
    name: str,
    dtype: torch.dtype,
    shape: list[int],
    abs_min: float | None,
    abs_max: float,
    nan: int | None,
    inf: int | None,
) -> TensorStats:
    limit = dtype_max(dtype)
    headroom = None
    near = False
    if limit is not None and math.isfinite(abs_max) and abs_max > 0:
        headroom = limit / abs_max
        near = headroom < NEAR_LIMIT_FACTOR
    return TensorStats(
        name=name,
        dtype=dtype_name(dtype),
        shape=shape,
        abs_min=abs_min,
        abs_max=abs_max,
        nan=nan,
        inf=inf,
        headroom=headroom,
        near_limit=near,
    )


def nonfinite_kind(lo: float, hi: float) -> str:
    """The kind of non-finite value an (amin, amax) pair shows: "nan", "inf", "-inf"."""
    if math.isnan(lo) or math.isnan(hi):
        return "nan"
    if hi == math.inf and lo == -math.inf:
        return "inf+-inf"
    return "-inf" if lo == -math.inf else "inf"
