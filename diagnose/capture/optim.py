"""Optimizers (class, every param group's hyper-parameters) and learning-rate schedulers.

Instances are found by wrapping ``Optimizer.__init__`` / ``LRScheduler.__init__`` and, for
optimizers built before the capture started, by torch's global step pre-hook. Only weak
references are kept; values are read at snapshot time, so nothing is synced per step.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.refs import WeakOrderedSet
from diagnose.capture.values import UNSAFE, dtype_name, json_safe, to_float
from diagnose.formatting import num


class OptimizerWatcher:
    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._optimizers: WeakOrderedSet[Any] = WeakOrderedSet()
        self._initial_lrs: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()
        # id -> [weak reference, steps]: counted on every optimizer step, so a plain dict
        # (a WeakKeyDictionary builds a weak reference per lookup)
        self._steps: dict[int, list[Any]] = {}
        self._hook_handle: Any = None

    def install(self, patcher: Patcher) -> None:
        import torch.optim.optimizer as optimizer_module

        patcher.wrap(
            optimizer_module.Optimizer,
            "__init__",
            after=self._constructed,
            label="Optimizer.__init__",
        )
        self._hook_handle = optimizer_module.register_optimizer_step_pre_hook(self._before_step)

    def uninstall(self) -> None:
        if self._hook_handle is not None:
            self._hook_handle.remove()
            self._hook_handle = None

    def _constructed(self, _result: Any, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        self._remember(optimizer)

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        try:
            entry = self._steps.get(id(optimizer))
            if entry is not None and entry[0]() is optimizer:
                entry[1] += 1
                return
            self._steps[id(optimizer)] = [weakref.ref(optimizer), 1]
            self._remember(optimizer)
        except Exception as exc:
            self._errors.record("optimizer step hook", exc)

    def _step_count(self, optimizer: Any) -> int:
        entry = self._steps.get(id(optimizer))
        return entry[1] if entry is not None and entry[0]() is optimizer else 0

    def add(self, optimizer: Any) -> None:
        """Register an optimizer built before the capture started."""
        self._remember(optimizer)

    def _remember(self, optimizer: Any) -> None:
        if self._optimizers.add(optimizer):
            self._initial_lrs[optimizer] = [
                _detached(group.get("lr")) for group in getattr(optimizer, "param_groups", [])
            ]

    def optimizers(self) -> list[Any]:
        return list(self._optimizers)

    def parameters(self) -> list[Any]:
        """Every parameter the optimizers train (each once)."""
        seen: dict[int, Any] = {}
        for optimizer in self._optimizers:
            for group in optimizer.param_groups:
                for param in group.get("params", []):
                    seen.setdefault(id(param), param)
        return list(seen.values())

    def snapshot(self, config: dict[str, Any]) -> None:
        described = [self._describe(opt) for opt in self._optimizers]
        config["optimizers"] = described
        if not described:
            config.setdefault("optimizer", None)
            config.setdefault("lr", None)
            return
        first = described[0]
        config["optimizer"] = first["class"]
        config["param_groups"] = first["param_groups"]
        config["optimizer_steps"] = first["steps"]
        groups = first["param_groups"]
        config["lr"] = groups[0].get("lr") if groups else None
        config["lr_initial"] = first["initial_lr"]

    def _describe(self, optimizer: Any) -> dict[str, Any]:
        groups = []
        for group in optimizer.param_groups:
            entry: dict[str, Any] = {}
            for key, value in group.items():
                if key == "params":
                    continue
                safe = json_safe(value)
                if safe is not UNSAFE:
                    entry[key] = safe
            params = list(group.get("params", []))
            entry["num_params"] = len(params)
            entry["numel"] = sum(int(p.numel()) for p in params)
            entry["dtypes"] = sorted({dtype_name(p.dtype) for p in params})
            groups.append(entry)
        initial = self._initial_lrs.get(optimizer) or []
        first_initial = groups[0].get("initial_lr") if groups else None
        if first_initial is None and initial:
            first_initial = to_float(initial[0])
        return {
            "class": type(optimizer).__name__,
            "module": type(optimizer).__module__,
            "steps": self._step_count(optimizer),
            "initial_lr": first_initial,
            "param_groups": groups,
        }


class SchedulerWatcher:
    """LR schedulers: class, key arguments, and warmup where the structure shows it."""

    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._schedulers: WeakOrderedSet[Any] = WeakOrderedSet()
        self._first_lrs: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()

    def install(self, patcher: Patcher) -> None:
        from torch.optim import lr_scheduler

        # Some schedulers (SequentialLR, ChainedScheduler, ReduceLROnPlateau) never call
        # LRScheduler.__init__, so every scheduler class torch ships with its own __init__ is
        # wrapped; a scheduler seen twice (subclass and base) is remembered once.
        base = lr_scheduler.LRScheduler
        classes = [base] + [
            cls
            for cls in vars(lr_scheduler).values()
            if isinstance(cls, type)
            and cls is not base
            and "__init__" in vars(cls)
            and (issubclass(cls, base) or cls.__name__ == "ReduceLROnPlateau")
        ]
        for cls in classes:
            patcher.wrap(cls, "__init__", after=self._constructed, label=f"{cls.__name__}.__init__")

    def _constructed(self, _result: Any, scheduler: Any, *args: Any, **kwargs: Any) -> None:
        self.add(scheduler)

    def add(self, scheduler: Any) -> None:
        """Register a scheduler (one built before the capture started has no ``first_lr``)."""
        if self._schedulers.add(scheduler):
            last = getattr(scheduler, "_last_lr", None)
            if isinstance(last, list):
                self._first_lrs[scheduler] = [_detached(v) for v in last]

    def snapshot(self, config: dict[str, Any]) -> None:
        schedulers = list(self._schedulers)
        nested = {id(child) for s in schedulers for child in getattr(s, "_schedulers", None) or []}
        top = [self._describe(s) for s in schedulers if id(s) not in nested]
        config["lr_scheduler"] = top[0] if top else None
        if len(top) > 1:
            config["lr_schedulers"] = top

    def _describe(self, scheduler: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"class": type(scheduler).__name__}
        for key, value in vars(scheduler).items():
            if key.startswith("_") or key in ("optimizer", "lr_lambdas", "verbose"):
                continue
            safe = json_safe(value)
            if safe is not UNSAFE:
                out[key] = safe
        last = getattr(scheduler, "_last_lr", None)
        if isinstance(last, list):
            out["last_lr"] = [to_float(v) for v in last]
        lambdas = getattr(scheduler, "lr_lambdas", None)
        if lambdas:
            out["lr_lambdas"] = [_describe_callable(f) for f in lambdas]
        children = getattr(scheduler, "_schedulers", None)
        if children:
            out["schedulers"] = [self._describe(child) for child in children]
        first = [to_float(v) for v in self._first_lrs.get(scheduler, [])]
        if first:
            out["first_lr"] = first
        warmup = _warmup(scheduler, out)
        if warmup is not None:
            out["warmup"] = warmup
        return out


def _warmup(scheduler: Any, described: dict[str, Any]) -> dict[str, Any] | None:
    """Warmup visible in the scheduler's structure: {"steps": n | None, "evidence": str}."""
    name = type(scheduler).__name__
    if name == "LinearLR" and (to_float(getattr(scheduler, "start_factor", 1.0)) or 1.0) < 1.0:
        return {
            "steps": getattr(scheduler, "total_iters", None),
            "evidence": "LinearLR with start_factor < 1",
        }
    if name == "OneCycleLR":
        total, pct = getattr(scheduler, "total_steps", None), getattr(scheduler, "_pct_start", None)
        pct = pct if pct is not None else _one_cycle_pct(scheduler)
        steps = int(total * pct) if isinstance(total, int) and pct is not None else None
        return {"steps": steps, "evidence": "OneCycleLR ramps up over pct_start"}
    if name in ("SequentialLR",):
        children = described.get("schedulers") or []
        milestones = getattr(scheduler, "_milestones", None) or []
        if children and children[0].get("warmup") and milestones:
            return {
                "steps": int(milestones[0]),
                "evidence": f"SequentialLR starting with {children[0]['class']}",
            }
    for entry in described.get("lr_lambdas", []):
        keywords = entry.get("keywords") or {}
        if isinstance(keywords.get("num_warmup_steps"), int):
            return {
                "steps": keywords["num_warmup_steps"],
                "evidence": f"{entry.get('function')} num_warmup_steps",
            }
    base = described.get("base_lrs") or []
    first = described.get("first_lr") or []
    if (
        base
        and first
        and isinstance(base[0], (int, float))
        and first[0] is not None
        and base[0] > 0
        and first[0] < 0.5 * base[0]
    ):
        return {
            "steps": None,
            "evidence": f"lr starts at {num(first[0])}, below the base lr {num(base[0])}",
        }
    return None


def _one_cycle_pct(scheduler: Any) -> float | None:
    phases = getattr(scheduler, "_schedule_phases", None)
    total = getattr(scheduler, "total_steps", None)
    if phases and isinstance(total, int) and total > 0:
        end = phases[0].get("end_step")
        if isinstance(end, (int, float)):
            return (float(end) + 1) / total
    return None


def _describe_callable(func: Any) -> dict[str, Any]:
    if isinstance(func, functools.partial):
        keywords = {k: v for k, v in func.keywords.items() if json_safe(v) is not UNSAFE}
        return {
            "function": getattr(func.func, "__qualname__", repr(func.func)),
            "keywords": json_safe(keywords),
        }
    return {"function": getattr(func, "__qualname__", type(func).__name__)}


def _detached(value: Any) -> Any:
    """A float as is; a tensor copied without a host sync (read at snapshot)."""
    if hasattr(value, "detach"):
        return value.detach().clone()
    return value
