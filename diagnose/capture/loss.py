"""The loss module(s) the script calls: any ``torch.nn.modules.loss._Loss`` instance.

``_Loss`` gets its own ``__call__`` that counts the call (one weak-dict update) and calls
through to ``Module.__call__``, so global hooks and the user's own hooks run as before.
"""

from __future__ import annotations

import weakref
from typing import Any

from diagnose.capture.patching import ErrorLog, Patcher
from diagnose.capture.values import pick

_FIELDS = (
    "reduction",
    "ignore_index",
    "label_smoothing",
    "beta",
    "delta",
    "margin",
    "eps",
    "log_input",
    "full",
    "blank",
    "zero_infinity",
    "log_target",
)


class LossWatcher:
    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._calls: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._order: dict[int, int] = {}
        self._first: Any = None  # held so that a loss local to main() outlives main()

    def install(self, patcher: Patcher) -> None:
        from torch.nn.modules import loss

        patcher.wrap(loss._Loss, "__call__", before=self._called, label="_Loss.__call__")

    def _called(self, module: Any, *args: Any, **kwargs: Any) -> None:
        count = self._calls.get(module)
        if count is None:
            self._order[id(module)] = len(self._order)
            if self._first is None:
                self._first = module
            count = 0
        self._calls[module] = count + 1

    def snapshot(self, config: dict[str, Any]) -> None:
        modules = sorted(self._calls.items(), key=lambda kv: self._order.get(id(kv[0]), 0))
        described = [self._describe(m, n) for m, n in modules]
        described.sort(key=lambda d: -d["calls"])
        config["loss"] = described[0] if described else None
        if len(described) > 1:
            config["losses"] = described

    def _describe(self, module: Any, calls: int) -> dict[str, Any]:
        out = {"class": type(module).__name__, "calls": calls, **pick(module, _FIELDS)}
        for name in ("weight", "pos_weight"):
            if getattr(module, name, None) is not None:
                out[f"has_{name}"] = True
        return out
