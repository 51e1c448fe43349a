"""Precision: parameter dtypes, autocast regions and GradScalers.

``precision`` is one of:
- ``"fp32"``, ``"fp16"``, ``"bf16"``, ``"fp64"``: every trained floating parameter has that
  dtype and no autocast region was entered with another low-precision dtype;
- ``"fp16-autocast"``, ``"bf16-autocast"``: an enabled autocast region (CUDA or CPU) with that
  dtype, over fp32 parameters (or parameters not seen);
- ``"mixed"``: parameters of several floating dtypes, or autocast with several dtypes, or
  autocast with a dtype different from half-precision parameters;
- ``"unknown"``: no parameters and no autocast were seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.refs import WeakOrderedSet
from diagnose.capture.values import dtype_name, to_float

SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


class AutocastWatcher:
    """Counts autocast entries per (device type, dtype, enabled); one dict update per entry."""

    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self.entries: Counter[tuple[str, str, bool]] = Counter()

    def install(self, patcher: Patcher) -> None:
        from torch.amp import autocast_mode

        patcher.wrap(
            autocast_mode.autocast, "__enter__", before=self._entered, label="autocast.__enter__"
        )

    def _entered(self, ctx: Any, *args: Any, **kwargs: Any) -> None:
        key = (str(ctx.device), dtype_name(ctx.fast_dtype), bool(ctx._enabled))
        self.entries[key] += 1

    def enabled_dtypes(self) -> list[str]:
        return sorted({dtype for (_, dtype, on) in self.entries if on})

    def snapshot(self, config: dict[str, Any]) -> None:
        config["autocast"] = [
            {"device_type": device, "dtype": dtype, "enabled": enabled, "entries": count}
            for (device, dtype, enabled), count in self.entries.items()
        ]
        dtypes = self.enabled_dtypes()
        config["autocast_dtype"] = dtypes[0] if len(dtypes) == 1 else (dtypes or None)


class ScalerWatcher:
    """GradScalers built during the run (``torch.amp`` and the ``torch.cuda.amp`` subclass)."""

    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._scalers: WeakOrderedSet[Any] = WeakOrderedSet()

    def install(self, patcher: Patcher) -> None:
        from torch.amp import grad_scaler

        patcher.wrap(
            grad_scaler.GradScaler, "__init__", after=self._constructed, label="GradScaler.__init__"
        )

    def _constructed(self, _result: Any, scaler: Any, *args: Any, **kwargs: Any) -> None:
        self._scalers.add(scaler)

    def add(self, scaler: Any) -> None:
        """Register a scaler built before the capture started (e.g. by a framework callback)."""
        self._scalers.add(scaler)

    def active(self) -> list[Any]:
        """Enabled scalers that have scaled at least one loss."""
        return [
            s
            for s in self._scalers
            if getattr(s, "_enabled", False) and getattr(s, "_scale", None) is not None
        ]

    def snapshot(self, config: dict[str, Any]) -> None:
        described = [_describe_scaler(s) for s in self._scalers]
        enabled = [d for d in described if d["enabled"]]
        config["grad_scaler"] = bool(enabled)
        config["scaler"] = (enabled or described or [None])[0]
        if len(described) > 1:
            config["scalers"] = described


def _describe_scaler(scaler: Any) -> dict[str, Any]:
    scale = getattr(scaler, "_scale", None)
    tracker = getattr(scaler, "_growth_tracker", None)
    return {
        "class": type(scaler).__name__,
        "device": str(getattr(scaler, "_device", "")) or None,
        "enabled": bool(getattr(scaler, "_enabled", False)),
        "init_scale": to_float(getattr(scaler, "_init_scale", None)),
        "growth_factor": to_float(getattr(scaler, "_growth_factor", None)),
        "backoff_factor": to_float(getattr(scaler, "_backoff_factor", None)),
        "growth_interval": getattr(scaler, "_growth_interval", None),
        "used": scale is not None,
        "scale": to_float(scale) if scale is not None else None,
        "growth_tracker": int(to_float(tracker)) if tracker is not None else None,
    }


def param_dtypes(params: Iterable[Any]) -> dict[str, int]:
    """Number of elements per dtype over the given parameters."""
    counts: Counter[str] = Counter()
    for param in params:
        counts[dtype_name(param.dtype)] += int(param.numel())
    return dict(counts)


def classify(dtypes: dict[str, int], autocast_dtypes: list[str]) -> str:
    """The ``precision`` label; see the module docstring for the rules."""
    floating = {d for d, n in dtypes.items() if d in SHORT and n > 0}
    low = floating - {"float32", "float64"}
    if len(autocast_dtypes) > 1 or len(floating) > 1:
        return "mixed"
    if autocast_dtypes:
        cast = autocast_dtypes[0]
        if low and low != {cast}:
            return "mixed"
        if low:
            return SHORT.get(cast, "mixed")
        return f"{SHORT.get(cast, cast)}-autocast"
    if floating:
        return SHORT[floating.pop()]
    return "unknown"
