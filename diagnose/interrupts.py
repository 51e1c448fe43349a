"""What can end a script under diagnose before it finishes, caught so the report is kept.

For the run's duration only (each state saved on entry and restored on exit, as
``torch.autograd.detect_anomaly`` does):

- SIGTERM raises ``Terminated`` in the main thread, so the runner unwinds as after Ctrl-C
  instead of the process dying with nothing written;
- SIGINT still raises KeyboardInterrupt, noting that the signal (not the script) raised it;
- ``os._exit`` first hands the exit code to a callback that writes the report, then exits.

A handler the script's environment already set (SIGINT ignored under ``nohup``, a torchrun
rank's own SIGTERM handler) is left alone. Only the main thread can set signal handlers; in
another thread the signals are not watched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

_REAL_EXIT = os._exit


def real_exit(code: int) -> None:
    """End the process now, as ``os._exit`` did before diagnose wrapped it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _REAL_EXIT(code)


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM arrives during a run.

    A BaseException, like KeyboardInterrupt, so that a script's ``except Exception`` does
    not swallow it.
    """


class SignalWatch:
    """Turns SIGTERM into ``Terminated`` and remembers which signal stopped the run."""

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._saved: dict[signal.Signals, Any] = {}

    def __enter__(self) -> SignalWatch:
        if threading.current_thread() is not threading.main_thread():
            return self
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._saved[signal.SIGINT] = signal.signal(signal.SIGINT, self._on_sigint)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self._saved[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()

    def disarm(self) -> None:
        """Put back the handlers that were there before (also in a forked child)."""
        for signum, handler in self._saved.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signum, handler)
        self._saved.clear()

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.SIGINT
        raise KeyboardInterrupt

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.SIGTERM
        raise Terminated("SIGTERM")

    def cause(self, exc: BaseException) -> str:
        """What stopped the run: the signal's name, or "KeyboardInterrupt" raised by the
        script itself (or by a handler of its own)."""
        if isinstance(exc, Terminated):
            return "SIGTERM"
        return "SIGINT" if self.received == signal.SIGINT else "KeyboardInterrupt"


class HardExitGuard:
    """While entered, ``os._exit(code)`` from this process calls ``on_exit(code)`` first.

    A forked child (a DataLoader worker, a multiprocessing process) inherits the wrapper but
    has another pid: it exits at once, as it would have. ``on_exit`` runs once; whatever it
    raises is ignored, so the exit itself always happens.
    """

    def __init__(self, on_exit: Callable[[int], None]) -> None:
        self._on_exit = on_exit
        self._pid = os.getpid()
        self._saved: Callable[[int], Any] | None = None
        self._called = False

    def __enter__(self) -> HardExitGuard:
        self._pid = os.getpid()
        self._saved = os._exit
        os._exit = self._exit  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None and os._exit == self._exit:
            os._exit = self._saved  # type: ignore[assignment]
        self._saved = None

    def _exit(self, code: int) -> None:
        if os.getpid() == self._pid and not self._called:
            self._called = True
            with contextlib.suppress(BaseException):
                self._on_exit(code)
            real_exit(code)
        (self._saved or _REAL_EXIT)(code)
