"""Gradient clipping: which function, the max, how often, and whether it saw unscaled grads.

``torch.nn.utils.clip_grad_norm_`` is usually reached as an attribute, but a script (or a
library) may have done ``from torch.nn.utils import clip_grad_norm_`` before the capture
started. So the function is wrapped in ``torch.nn.utils.clip_grad`` and the module-level names
bound to the same function object (``torch.nn.utils`` itself, and the script's own bindings;
see ``aliases``) are pointed at the wrapper too (all restored on uninstall).
``clip_grads_with_norm_`` (the clipping half of ``clip_grad_norm_``, which accelerate calls
after its own ``get_total_norm``) is public only in ``torch.nn.utils``: ``clip_grad`` keeps it
as ``_clip_grads_with_norm_`` and calls it from ``clip_grad_norm_``, so it is wrapped under its
public name only, and a ``clip_grad_norm_`` call is not counted twice. Under an enabled
GradScaler, the per-optimizer stage the scaler keeps tells whether ``scaler.unscale_(optimizer)``
ran before the clip in this step, without a sync.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from diagnose.capture.aliases import find_bindings
from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.precision import ScalerWatcher
from diagnose.capture.values import json_safe, to_float

_FUNCTIONS = {
    "clip_grad_norm_": "norm",
    "clip_grad_norm": "norm",
    "clip_grads_with_norm_": "norm",
    "clip_grad_value_": "value",
}
_NO_NORM_TYPE = {"clip_grads_with_norm_"}  # its third argument is the norm, not its type


class _Kind:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.calls = 0
        self.max: Any = None
        self.max_values: list[Any] = []
        self.norm_type: Any = None
        self.function = ""
        self.after_unscale = 0
        self.before_unscale = 0


class ClipWatcher:
    def __init__(self, errors: ErrorLog, scalers: ScalerWatcher) -> None:
        self._errors = errors
        self._scalers = scalers
        self._kinds: dict[str, _Kind] = {}
        # called with the total gradient norm a clip by norm measured (before clipping): the
        # tracer's history shows that norm, not the clipped one the optimizer then sees
        self.norm_listeners: list[Callable[[Any], None]] = []

    def install(self, patcher: Patcher) -> None:
        import torch.nn.utils as utils
        import torch.nn.utils.clip_grad as clip_grad

        wrappers: dict[int, tuple[Any, Any]] = {}
        for name, kind in _FUNCTIONS.items():
            owner = clip_grad if name in vars(clip_grad) else utils
            original = vars(owner).get(name)
            if original is None:
                continue
            wrapper = patcher.wrap(
                owner,
                name,
                before=self._hook(kind, name),
                after=self._measured(name) if kind == "norm" else None,
                label=f"torch.nn.utils.{name}",
            )
            if wrapper is not None:
                wrappers[id(original)] = (original, wrapper)
        if wrappers:
            _rebind_aliases(patcher, wrappers, skip=clip_grad, errors=self._errors)

    def _hook(self, kind: str, function: str) -> Any:
        def before(*args: Any, **kwargs: Any) -> None:
            record = self._kinds.get(kind)
            if record is None:
                record = self._kinds[kind] = _Kind(kind)
            record.calls += 1
            record.function = function
            limit_name = "max_norm" if kind == "norm" else "clip_value"
            limit = args[1] if len(args) > 1 else kwargs.get(limit_name)
            if limit is not record.max:
                record.max = limit
                if len(record.max_values) < 5 and not any(
                    v is limit or v == limit for v in record.max_values
                ):
                    record.max_values.append(limit)
            if kind == "norm" and function not in _NO_NORM_TYPE:
                record.norm_type = args[2] if len(args) > 2 else kwargs.get("norm_type", 2.0)
            for scaler in self._scalers.active():
                stages = [state.get("stage") for state in scaler._per_optimizer_states.values()]
                if any(getattr(stage, "name", "READY") != "READY" for stage in stages):
                    record.after_unscale += 1
                else:
                    record.before_unscale += 1
                break

        return before

    def _measured(self, function: str) -> Any:
        """Hands the total norm the clip measured to the listeners: ``clip_grad_norm_``
        returns it; ``clip_grads_with_norm_`` is given it (its third argument)."""

        def after(result: Any, *args: Any, **kwargs: Any) -> None:
            if not self.norm_listeners:
                return
            if function in _NO_NORM_TYPE:
                result = args[2] if len(args) > 2 else kwargs.get("total_norm")
            for listener in self.norm_listeners:
                listener(result)

        return after

    def snapshot(self, config: dict[str, Any]) -> None:
        described = [self._describe(k) for k in self._kinds.values()]
        described.sort(key=lambda d: -d["calls"])
        active = [d for d in described if d["max"] not in ("inf", None)]
        config["grad_clip"] = active[0] if active else None
        if len(described) > 1:
            config["grad_clips"] = described
        inactive = [d for d in described if d["max"] == "inf"]
        if inactive and not active:
            config["grad_clip_inactive"] = {
                **inactive[0],
                "why": "max_norm=inf measures the norm without clipping",
            }

    def _describe(self, record: _Kind) -> dict[str, Any]:
        limit = to_float(record.max)
        out: dict[str, Any] = {
            "kind": record.kind,
            "max": json_safe(limit) if limit is not None else None,
            "function": f"torch.nn.utils.{record.function}",
            "calls": record.calls,
        }
        if record.kind == "norm":
            out["norm_type"] = json_safe(to_float(record.norm_type))
        if len(record.max_values) > 1:
            out["max_values"] = [json_safe(to_float(v)) for v in record.max_values]
        if record.after_unscale or record.before_unscale:
            out["clip_after_unscale"] = record.before_unscale == 0
            out["calls_before_unscale"] = record.before_unscale
        else:
            out["clip_after_unscale"] = None
        return out


def _rebind_aliases(
    patcher: Patcher, wrappers: dict[int, tuple[Any, Any]], skip: ModuleType, errors: ErrorLog
) -> None:
    """Point the module-level bindings of the original clip functions at their wrappers."""
    originals = [original for original, _ in wrappers.values()]
    for module, name, original in find_bindings(originals, _FUNCTIONS, skip=(skip,)):
        try:
            patcher.alias(module, name, wrappers[id(original)][1])
        except Exception as exc:
            errors.record(f"rebind {name} in {getattr(module, '__name__', '?')}", exc)
