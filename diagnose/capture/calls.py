"""Which lines of the user's code called ``backward``, ``optimizer.step`` and ``zero_grad``.

A patch that works on the training loop (a ``continue`` guard, ``zero_grad``, a clip before
the step) must land in the loop that really ran those calls, not in whatever ``for`` loop looks
like one: an LBFGS script calls ``loss.backward()`` inside a closure and ``optimizer.step``
inside ``for i in range(steps)``, while the model's forward has a loop of its own. The shape of
the source cannot tell these apart; what ran can.

``loss.backward()`` is seen through ``torch.autograd.backward``, which it calls. Each call walks up the stack to the first frame outside torch and diagnose (the user's line)
and counts it under that (file, line, function). The set of such lines is tiny (a script has a
handful of them), so a step costs one short frame walk and a dict update.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from diagnose.capture.patching import ErrorLog, Patcher

KINDS = ("backward", "step", "zero_grad")
MAX_SITES = 20  # per kind: a script has a few; a library calling from many lines is cut here
MAX_DEPTH = 50  # frames walked up before giving up on finding the user's line


def _package_dir(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    return str(Path(file).resolve().parent) + os.sep if file else None


class CallSiteWatcher:
    """Counts the user's call sites of backward, optimizer step and zero_grad."""

    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._sites: dict[str, dict[tuple[str, int, str], int]] = {k: {} for k in KINDS}
        self._skip: tuple[str, ...] = ()
        self._step_hook: Any = None

    def install(self, patcher: Patcher) -> None:
        import torch
        import torch.optim.optimizer as optimizer_module

        self._skip = tuple(d for d in (_package_dir("torch"), _package_dir("diagnose")) if d)
        # Tensor.backward calls torch.autograd.backward: wrapping the latter counts each once
        patcher.wrap(
            torch.autograd, "backward", before=self._on("backward"), label="autograd.backward"
        )
        patcher.wrap(
            optimizer_module.Optimizer,
            "zero_grad",
            before=self._on("zero_grad"),
            label="Optimizer.zero_grad",
        )
        on_step = self._on("step")
        self._step_hook = optimizer_module.register_optimizer_step_pre_hook(
            lambda optimizer, args, kwargs: on_step()
        )

    def uninstall(self) -> None:
        if self._step_hook is not None:
            self._step_hook.remove()
            self._step_hook = None

    def _on(self, kind: str) -> Any:
        def record(*_args: Any, **_kwargs: Any) -> None:
            try:
                site = self._user_site(sys._getframe(1))
                if site is None:
                    return
                sites = self._sites[kind]
                if site in sites or len(sites) < MAX_SITES:
                    sites[site] = sites.get(site, 0) + 1
            except Exception as exc:
                self._errors.record(f"call site of {kind}", exc)

        return record

    def _user_site(self, frame: FrameType | None) -> tuple[str, int, str] | None:
        for _ in range(MAX_DEPTH):
            if frame is None:
                return None
            file = frame.f_code.co_filename
            if not file.startswith("<") and not file.startswith(self._skip):
                return file, frame.f_lineno, frame.f_code.co_name
            frame = frame.f_back
        return None

    def snapshot(self, config: dict[str, Any]) -> None:
        if not any(self._sites.values()):
            return
        config["training_calls"] = {
            kind: [
                {"file": file, "line": line, "function": function, "calls": calls}
                for (file, line, function), calls in sites.items()
            ]
            for kind, sites in self._sites.items()
        }
