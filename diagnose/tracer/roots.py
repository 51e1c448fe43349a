"""Watching the calls of a few module instances without putting anything on them.

A light step watches only the model's root calls. Hooks registered on the root instances
would live in the model's own hook dicts: ``copy.deepcopy(model)`` and ``torch.save(model)``
would copy or pickle them (and with them the tracer), and ``model._forward_hooks`` would not
be what the script registered. Instead, while a light step runs, the *class* of each root gets
a ``__call__`` that calls the tracer around the call when the instance is a watched root and
is a plain pass-through otherwise (a submodule of another class never meets it, so torch's
hook-free fast path stays as it was). Instances are left untouched, so a copy, a pickle or a
checkpoint of the model is exactly the plain run's, and a copy (an EMA model) is not watched.

When watching stops the classes get their own ``__call__`` back, and each wrapper that some
code captured meanwhile (``torch.compile`` keeps ``model.__call__``) turns into a plain
pass-through holding nothing of the tracer.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable
from typing import Any

import torch

RAISED: Any = object()  # the output ``after`` is given when the call raised
_MISSING: Any = object()
_is_compiling = torch.compiler.is_compiling

Before = Callable[[Any, tuple], None]
After = Callable[[Any, tuple, dict, Any], None]


class _Watching:
    """What a wrapper reads at each call; emptied when watching stops."""

    __slots__ = ("after", "before", "ids")

    def __init__(self, ids: dict[int, Any], before: Before, after: After) -> None:
        self.ids = ids
        self.before: Before | None = before
        self.after: After | None = after


class RootCalls:
    """Calls ``before(module, args)`` and ``after(module, args, kwargs, output)`` around each
    call of the watched instances (``output`` is ``RAISED`` when the call raised)."""

    def __init__(self, before: Before, after: After) -> None:
        self._before = before
        self._after = after
        self._watching: _Watching | None = None
        # (class, its own __call__ or _MISSING, the wrapper put there)
        self._patched: list[tuple[type, Any, Any]] = []

    def watch(self, modules: Iterable[torch.nn.Module]) -> None:
        """Start watching ``modules`` (what was watched before is let go first)."""
        self.stop()
        ids = {id(m): m for m in modules}
        if not ids:
            return
        watching = self._watching = _Watching(ids, self._before, self._after)
        # Base classes first: a subclass then finds the wrapper it inherits and is skipped,
        # where its own wrapper would call its base's through super() and watch a call twice.
        classes = sorted(dict.fromkeys(type(m) for m in ids.values()), key=lambda c: len(c.__mro__))
        for cls in classes:
            current = _class_call(cls)
            own = vars(cls).get("__call__", _MISSING)
            if current is None or getattr(current, "__diagnose_root_call__", None) is watching:
                continue  # an inherited wrapper of this watch already sees this class's calls
            if own is not _MISSING and not isinstance(own, types.FunctionType):
                continue  # not a plain method: left alone (the step's checks still run)
            wrapper = _wrapper(cls, own, current, watching)
            try:
                type.__setattr__(cls, "__call__", wrapper)
            except (TypeError, AttributeError):  # a class that cannot take attributes
                continue
            self._patched.append((cls, own, wrapper))

    def stop(self) -> None:
        """Give every class its own ``__call__`` back; a wrapper kept elsewhere passes through."""
        watching, self._watching = self._watching, None
        if watching is not None:
            watching.ids, watching.before, watching.after = {}, None, None
        while self._patched:
            cls, own, wrapper = self._patched.pop()
            if vars(cls).get("__call__") is not wrapper:
                continue  # replaced since by other code: theirs stays, ours passes through
            while getattr(own, "__diagnose_root_call__", None) is not None and not (
                own.__diagnose_root_call__.ids
            ):
                own = own.__diagnose_root_own__  # another watch's, stopped since: not kept
            if own is _MISSING:
                type.__delattr__(cls, "__call__")
            else:
                type.__setattr__(cls, "__call__", own)


def _class_call(cls: type) -> Any:
    """The ``__call__`` instances of ``cls`` get: the first one along its MRO."""
    return next((vars(k)["__call__"] for k in cls.__mro__ if "__call__" in vars(k)), None)


def _wrapper(cls: type, own: Any, current: Any, watching: _Watching) -> Callable[..., Any]:
    """The ``__call__`` put on ``cls``: its own one (``own``), or else the inherited one
    looked up at each call, so a base class patched later (``torch.fx`` patches
    ``Module.__call__`` while it traces) is honoured."""

    @functools.wraps(current)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = super(cls, self).__call__ if own is _MISSING else own.__get__(self, cls)
        if id(self) not in watching.ids or _is_compiling():
            return call(*args, **kwargs)
        before, after = watching.before, watching.after
        if before is None or after is None:
            return call(*args, **kwargs)
        before(self, args)
        try:
            result = call(*args, **kwargs)
        except BaseException:
            after(self, args, kwargs, RAISED)
            raise
        after(self, args, kwargs, result)
        return result

    __call__.__diagnose_root_call__ = watching  # type: ignore[attr-defined]
    __call__.__diagnose_root_own__ = own  # type: ignore[attr-defined]
    return __call__
