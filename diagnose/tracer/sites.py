"""The user's lines an event is located at when its value was not made on one of them.

A value born inside a module (a loss module, a layer of an installed model) or by an
optimizer's update has no op on the user's own line; what the user wrote there is the call
that led to it: the model's or the loss module's call, ``optimizer.step()``, and, for a cause
in the optimizer's own settings (its eps), the line that built the optimizer. Each is taken
once per root call or step (one walk up the stack) and kept for the one event of the run.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from diagnose.tracer.ops import Site, user_site


class Sites:
    """The latest user line of each root call and optimizer step, each optimizer's build, and
    each optimizer's own count of steps."""

    def __init__(self) -> None:
        self._roots: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._steps: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._built: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()
        self._done: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def root_called(self, module: Any) -> None:
        _keep(self._roots, module, user_site())

    def stepped(self, optimizer: Any) -> None:
        _keep(self._steps, optimizer, user_site())

    def optimizer_built(self, optimizer: Any) -> None:
        _keep(self._built, optimizer, user_site())

    def root(self, module: Any) -> Site | None:
        return _get(self._roots, module)

    def step(self, optimizer: Any) -> Site | None:
        return _get(self._steps, optimizer)

    def built(self, optimizer: Any) -> Site | None:
        return _get(self._built, optimizer)

    def step_done(self, optimizer: Any) -> None:
        """One more step of ``optimizer``: optimizers that take turns count their own."""
        with contextlib.suppress(TypeError):
            self._done[optimizer] = self._done.get(optimizer, 0) + 1

    def steps(self, optimizer: Any) -> int:
        """The steps ``optimizer`` completed."""
        return _get(self._done, optimizer) or 0

    def optimizers(self) -> list[Any]:
        """Every optimizer that stepped while watched."""
        return list(self._steps.keys())


def _keep(sites: weakref.WeakKeyDictionary[Any, Site], owner: Any, site: Site | None) -> None:
    if site is not None:
        with contextlib.suppress(TypeError):  # not weakly referable: its line is not known
            sites[owner] = site


def _get(sites: weakref.WeakKeyDictionary[Any, Site], owner: Any) -> Site | None:
    try:
        return sites.get(owner)
    except TypeError:
        return None
