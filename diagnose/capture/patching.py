"""Chained, reversible patches that never change what the patched code does.

Every wrapper calls through to whatever was there before (so other tools' wrappers keep
working), runs the capture's own bookkeeping inside ``try`` so that a bug in ``diagnose`` never
raises into the user's code, and becomes a pure pass-through once switched off. ``restore_all``
undoes the patches last-in first-out and puts back the exact objects that were there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from diagnose.capture.warning_origin import WarningOrigin

_MISSING: Any = object()


class ErrorLog:
    """Internal errors of the capture, kept for the report instead of raised into user code."""

    def __init__(self, limit: int = 20) -> None:
        self.limit = limit
        self.items: list[str] = []
        self.dropped = 0

    def record(self, where: str, exc: BaseException) -> None:
        message = f"{where}: {type(exc).__name__}: {exc}".splitlines()[0][:300]
        if message in self.items:
            return
        if len(self.items) >= self.limit:
            self.dropped += 1
            return
        self.items.append(message)

    def as_list(self) -> list[str]:
        extra = [f"... {self.dropped} more"] if self.dropped else []
        return [*self.items, *extra]


class _Switch:
    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True


@dataclass
class _Patch:
    owner: Any
    name: str
    original: Any  # the raw object found in owner's namespace, or _MISSING
    wrapper: Any
    switch: _Switch


Hook = Callable[..., None]


class Patcher:
    """Installs wrappers on attributes of classes and modules, and takes them all back."""

    def __init__(self, errors: ErrorLog) -> None:
        self.errors = errors
        self._patches: list[_Patch] = []
        self._warnings = WarningOrigin()

    def wrap(
        self,
        owner: Any,
        name: str,
        *,
        before: Hook | None = None,
        after: Hook | None = None,
        on_raise: Hook | None = None,
        label: str | None = None,
    ) -> Callable[..., Any] | None:
        """Wrap ``owner.name``; ``before(*args, **kwargs)`` and ``after(result, *args, **kw)``.

        ``on_raise(exc, *args, **kwargs)`` runs when the original raises; the exception then
        propagates unchanged.

        A method inherited rather than defined on ``owner`` is wrapped by defining it on
        ``owner`` and calling through ``super()`` at call time, so later changes to the base
        class are still honoured. Returns the wrapper, or None when there is nothing to wrap.
        """
        label = label or f"{getattr(owner, '__name__', owner)}.{name}"
        original = vars(owner).get(name, _MISSING)
        found = self._callable(owner, name, original, label)
        if found is None:
            return None
        template, call_original = found
        switch = _Switch()
        wrapper = _wrapper(
            template, call_original, switch, self.errors, label, before, after, on_raise
        )
        wrapper.__diagnose_capture__ = True  # type: ignore[attr-defined]
        self._warnings.install()
        setattr(owner, name, wrapper)
        self._patches.append(_Patch(owner, name, original, wrapper, switch))
        return wrapper

    def _callable(
        self, owner: Any, name: str, original: Any, label: str
    ) -> tuple[Any, Callable[..., Any]] | None:
        """What to wrap: (the function whose metadata the wrapper copies, how to call it)."""
        if original is _MISSING:
            if not isinstance(owner, type) or not callable(getattr(owner, name, None)):
                return None

            def call_inherited(*args: Any, **kwargs: Any) -> Any:
                return getattr(super(owner, args[0]), name)(*args[1:], **kwargs)

            return getattr(owner, name), call_inherited
        if isinstance(original, (classmethod, staticmethod, property)) or not callable(original):
            self.errors.record(label, TypeError("not a plain function; left alone"))
            return None
        return original, original

    def alias(self, owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
        """Point another name (e.g. a ``from x import f`` binding) at an installed wrapper."""
        original = vars(owner).get(name, _MISSING)
        switch = next((p.switch for p in self._patches if p.wrapper is wrapper), _Switch())
        setattr(owner, name, wrapper)
        self._patches.append(_Patch(owner, name, original, wrapper, switch))

    def restore_all(self) -> None:
        """Undo every patch, newest first, restoring the exact original objects.

        A patch that someone else has since wrapped again is left in place (removing it would
        drop their wrapper too) but switched to a pure pass-through, and noted.
        """
        self._warnings.restore()
        while self._patches:
            patch = self._patches.pop()
            patch.switch.on = False
            try:
                current = vars(patch.owner).get(patch.name, _MISSING)
                if current is not patch.wrapper:
                    self.errors.record(
                        f"restore {patch.name}",
                        RuntimeError("replaced by other code after install; left as pass-through"),
                    )
                elif patch.original is _MISSING:
                    delattr(patch.owner, patch.name)
                else:
                    setattr(patch.owner, patch.name, patch.original)
            except Exception as exc:
                self.errors.record(f"restore {patch.name}", exc)

    @property
    def installed(self) -> list[tuple[Any, str]]:
        return [(p.owner, p.name) for p in self._patches]


def _wrapper(
    template: Any,
    call_original: Callable[..., Any],
    switch: _Switch,
    errors: ErrorLog,
    label: str,
    before: Hook | None,
    after: Hook | None,
    on_raise: Hook | None,
) -> Callable[..., Any]:
    """The wrapper itself: hooks inside ``try``, a pure pass-through once switched off."""

    @functools.wraps(template)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not switch.on:
            return call_original(*args, **kwargs)
        if before is not None:
            try:
                before(*args, **kwargs)
            except Exception as exc:
                errors.record(label, exc)
        try:
            result = call_original(*args, **kwargs)
        except BaseException as raised:
            if on_raise is not None:
                try:
                    on_raise(raised, *args, **kwargs)
                except Exception as exc:
                    errors.record(label, exc)
            raise
        if after is not None:
            try:
                after(result, *args, **kwargs)
            except Exception as exc:
                errors.record(label, exc)
        return result

    return wrapper
