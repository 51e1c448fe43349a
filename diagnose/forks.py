"""What a forked child of the traced script leaves behind: diagnose's watch of the run.

A process the script forks (a ``multiprocessing`` pool on Linux, a bare ``os.fork()``)
starts as a copy of this one, tracer, learning watch and signal handlers included. Under
plain python such a child is the script's alone, so it is here too: right after the fork
every watch entered for the run is disarmed in the child (``os.register_at_fork``), so that
the child neither records nor stops anything, gets the signal handlers it would have had
(a pool's SIGTERM ends its workers at once), and never writes or prints a report of its own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

_disarms: dict[int, Callable[[], None]] = {}


def _in_child() -> None:
    disarms = list(_disarms.values())
    _disarms.clear()
    for disarm in reversed(disarms):  # the last entered first, as an exit would
        with contextlib.suppress(Exception):
            disarm()


if hasattr(os, "register_at_fork"):  # registered once per process: it cannot be removed
    os.register_at_fork(after_in_child=_in_child)


@contextlib.contextmanager
def disarmed_in_children(disarm: Callable[[], None]) -> Iterator[None]:
    """While entered, a child forked from this process calls ``disarm()`` first thing."""
    key = id(disarm)
    _disarms[key] = disarm
    try:
        yield
    finally:
        _disarms.pop(key, None)
