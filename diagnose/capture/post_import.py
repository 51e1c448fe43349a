"""Run a callback when a module finishes importing, without importing it ourselves.

The capture must see ``transformers.TrainingArguments`` or a Lightning ``Trainer`` only when the
user's script uses them: importing those libraries on the script's behalf would cost seconds
and could change its behaviour. A finder at the front of ``sys.meta_path`` notices the named
modules, lets the normal machinery load them, and calls back once their code has run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from diagnose.capture.patching import ErrorLog

Callback = Callable[[ModuleType], None]


class PostImportHooks(importlib.abc.MetaPathFinder):
    """Callbacks keyed by full module name; removed from ``sys.meta_path`` by ``close``."""

    def __init__(self, errors: ErrorLog) -> None:
        self._errors = errors
        self._callbacks: dict[str, list[Callback]] = {}
        self._searching: set[str] = set()
        self._closed = False

    def when_imported(self, name: str, callback: Callback) -> None:
        """Call ``callback(module)`` now if ``name`` is imported, else right after its import."""
        module = sys.modules.get(name)
        if module is not None and not _initialising(module):
            self._run(name, callback, module)
            return
        self._callbacks.setdefault(name, []).append(callback)
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def close(self) -> None:
        self._closed = True
        self._callbacks.clear()
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._closed or fullname not in self._callbacks or fullname in self._searching:
            return None
        self._searching.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception as exc:
            self._errors.record(f"import hook {fullname}", exc)
            return None
        finally:
            self._searching.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _NotifyingLoader(spec.loader, lambda module: self._loaded(fullname, module))
        return spec

    def _loaded(self, name: str, module: ModuleType) -> None:
        for callback in self._callbacks.pop(name, []):
            self._run(name, callback, module)

    def _run(self, name: str, callback: Callback, module: ModuleType) -> None:
        try:
            callback(module)
        except Exception as exc:
            self._errors.record(f"after import {name}", exc)


class _NotifyingLoader(importlib.abc.Loader):
    """Delegates to the real loader, then puts it back on the module and calls back."""

    def __init__(self, loader: Any, on_loaded: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._on_loaded = on_loaded

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._on_loaded(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _initialising(module: ModuleType) -> bool:
    spec = getattr(module, "__spec__", None)
    return bool(getattr(spec, "_initializing", False))
