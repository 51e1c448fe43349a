"""Local gradients before DDP's all-reduce: which rank made them non-finite.

After the all-reduce every rank holds the same (non-finite) gradients, so the tracer alone
would see the NaN on every rank. While installed, every ``DistributedDataParallel`` built
gets a comm hook that takes one sum of each bucket's *local* gradients (no host
read; values are read only when a rank's evidence is written) and then runs the user's hook,
or the default all-reduce. A user's own ``register_comm_hook`` still works: it becomes the
hook that runs after the check, instead of failing because a hook is already registered.
"""

from __future__ import annotations

import contextlib
import math
from collections import deque
from typing import Any

import torch
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

_INNER = "_diagnose_inner_hook"


class GradWatch:
    """Installs the checking comm hook on every DDP model built while installed."""

    def __init__(self) -> None:
        self.models: list[Any] = []
        self.iterations: deque[list[tuple[int, Any, list[Any]]]] = deque(maxlen=2)
        self.completed = 0
        self._current: list[tuple[int, Any, list[Any]]] = []
        self._saved: list[tuple[str, Any]] = []

    # -- install -------------------------------------------------------------------------

    def install(self) -> None:
        watch = self
        init, register, builtin = (
            DDP.__init__,
            DDP.register_comm_hook,
            DDP._register_builtin_comm_hook,
        )
        self._saved = [
            ("__init__", init),
            ("register_comm_hook", register),
            ("_register_builtin_comm_hook", builtin),
        ]

        def __init__(ddp: Any, *args: Any, **kwargs: Any) -> None:
            init(ddp, *args, **kwargs)
            setattr(ddp, _INNER, None)
            register(ddp, ddp.process_group, watch._hook(ddp))
            watch.models.append(ddp)

        def register_comm_hook(ddp: Any, state: Any, hook: Any) -> None:
            if hasattr(ddp, _INNER) and getattr(ddp, _INNER) is None:
                setattr(ddp, _INNER, (state, hook))
                return None
            return register(ddp, state, hook)

        def _register_builtin_comm_hook(ddp: Any, comm_hook_type: Any) -> None:
            hooks = {
                "ALLREDUCE": default_hooks.allreduce_hook,
                "FP16_COMPRESS": default_hooks.fp16_compress_hook,
            }
            hook = hooks.get(getattr(comm_hook_type, "name", ""))
            if hasattr(ddp, _INNER) and getattr(ddp, _INNER) is None and hook is not None:
                setattr(ddp, _INNER, (ddp.process_group, hook))
                return None
            return builtin(ddp, comm_hook_type)

        __init__.__wrapped__ = init  # type: ignore[attr-defined]
        DDP.__init__ = __init__
        DDP.register_comm_hook = register_comm_hook
        DDP._register_builtin_comm_hook = _register_builtin_comm_hook

    def uninstall(self) -> None:
        for name, original in self._saved:
            setattr(DDP, name, original)
        self._saved = []

    def _hook(self, ddp: Any) -> Any:
        watch = self

        # No annotations: DDP rejects a hook whose annotations are not GradBucket/Future
        # objects, and this module's annotations are strings.
        def diagnose_check_then_allreduce(state, bucket):  # type: ignore[no-untyped-def]
            buf = bucket.buffer()
            total = None
            if (buf.is_floating_point() or buf.is_complex()) and buf.numel():
                # One sum (half the cost of aminmax): any nan/inf makes it non-finite.
                # Accumulated in at least fp32 so that fp16 buckets do not overflow it.
                wide = torch.float64 if buf.dtype == torch.float64 else torch.float32
                total = (
                    buf.detach().abs().sum(dtype=wide)
                    if buf.is_complex()
                    else buf.detach().sum(dtype=wide)
                )
            watch._current.append((bucket.index(), total, bucket.parameters()))
            if bucket.is_last():
                watch.iterations.append(watch._current)
                watch._current = []
                watch.completed += 1
            inner = getattr(ddp, _INNER, None)
            if inner is None:
                return default_hooks.allreduce_hook(state, bucket)
            return inner[1](inner[0], bucket)

        return diagnose_check_then_allreduce

    # -- evidence ------------------------------------------------------------------------

    def local_summary(self, allow_device_read: bool = True) -> dict[str, Any] | None:
        """Were this rank's own gradients finite in its last all-reduce? None if unknown.

        Reading an accelerator value from a thread while the main thread is blocked in a
        collective could wait for that collective, so only CPU values are read unless
        ``allow_device_read``.
        """
        buckets = self._current or (self.iterations[-1] if self.iterations else None)
        if not buckets:
            return None
        names = self._param_names()
        bad: list[str] = []
        for index, total, params in buckets:
            if total is None:
                continue
            if total.device.type != "cpu" and not allow_device_read:
                return None
            if not math.isfinite(float(total)):
                bad.extend(names.get(id(p), f"bucket {index}") for p in params)
        return {
            "finite": not bad,
            "iteration": self.completed,
            "buckets": len(buckets),
            "nonfinite_params": bad[:16],
        }

    def _param_names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        for ddp in self.models:
            for name, p in ddp.module.named_parameters():
                names.setdefault(id(p), name)
        return names

    def config(self) -> dict[str, Any] | None:
        """How the first DDP model reduces gradients (for the report's config)."""
        if not self.models:
            return None
        ddp = self.models[0]
        inner = getattr(ddp, _INNER, None)
        buckets = len(self.iterations[-1]) if self.iterations else None
        return {
            "bucket_cap_mb": round(getattr(ddp, "bucket_bytes_cap", 0) / 2**20, 3),
            "buckets": buckets,
            "all_reduce": getattr(inner[1], "__name__", "custom") if inner else "allreduce",
            "find_unused_parameters": bool(getattr(ddp, "find_unused_parameters", False)),
            "gradient_as_bucket_view": bool(getattr(ddp, "gradient_as_bucket_view", False)),
            "static_graph": bool(getattr(ddp, "static_graph", False)),
            "models": len(self.models),
        }


def process_group_config() -> dict[str, Any]:
    """World size and backend of the default process group, when there is one."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return {}
    info: dict[str, Any] = {"world_size": dist.get_world_size()}
    with contextlib.suppress(Exception):
        info["backend"] = str(dist.get_backend())
    return info
