"""What can end a script under diagnose before it finishes, caught so the report is kept.

For the run's duration only (each state saved on entry and restored on exit, as
``torch.autograd.detect_anomaly`` does):

- SIGTERM and SIGHUP (a closed terminal, an ssh session that dropped) raise ``Terminated``
  in the main thread, so the runner unwinds as after Ctrl-C instead of the process dying
  with nothing written;
- SIGINT still raises KeyboardInterrupt, noting that the signal (not the script) raised it;
- the script sees the handlers it would see under python: ``signal.getsignal`` and the
  previous handler ``signal.signal`` returns are what was there before diagnose, so a
  handler of the script's own that chains to the one it replaced reaches that one, not
  diagnose's; a default handler the script puts back is diagnose's watch again;
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
from collections.abc import Callable, Iterator
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
    """Raised in the main thread when SIGTERM or SIGHUP arrives during a run (its one
    argument: the signal's name).

    A BaseException, like KeyboardInterrupt, so that a script's ``except Exception`` does
    not swallow it.
    """


_STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class SignalWatch:
    """Turns SIGTERM and SIGHUP into ``Terminated`` and remembers which signal stopped the
    run; while entered, ``signal.signal`` and ``signal.getsignal`` show the script the
    handlers it set itself, or those that were there before."""

    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._saved: dict[int, Any] = {}  # signal -> the handler before diagnose
        self._ours: dict[int, Any] = {}  # signal -> diagnose's handler
        self._script: dict[int, Any] = {}  # signal -> the handler the script last set
        self._functions: tuple[Any, Any] | None = None  # signal.signal, signal.getsignal

    def __enter__(self) -> SignalWatch:
        if threading.current_thread() is not threading.main_thread():
            return self
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._watch(signal.SIGINT, self._on_sigint)
        for signum in _STOPPING:
            if signal.getsignal(signum) == signal.SIG_DFL:
                self._watch(signum, self._on_stop)
        if self._saved:
            self._functions = signal.signal, signal.getsignal
            signal.signal, signal.getsignal = self._signal, self._getsignal  # type: ignore
        return self

    def _watch(self, signum: int, handler: Any) -> None:
        self._saved[signum] = signal.signal(signum, handler)
        self._ours[signum] = handler

    def __exit__(self, *exc: object) -> None:
        self._restore(self._saved)

    def disarm(self) -> None:
        """In a forked child: the handlers the script set (or those from before diagnose),
        as the child would have them under python."""
        self._restore({**self._saved, **self._script})

    def _restore(self, handlers: dict[int, Any]) -> None:
        if self._functions is not None:
            signal.signal, signal.getsignal = self._functions  # type: ignore[assignment]
            self._functions = None
        for signum, handler in handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        self._saved.clear()
        self._ours.clear()
        self._script.clear()

    def _signal(self, signalnum: int, handler: Any) -> Any:
        """``signal.signal`` as the script sees it."""
        assert self._functions is not None
        real_signal = self._functions[0]
        if signalnum not in self._ours or threading.current_thread() is not threading.main_thread():
            return real_signal(signalnum, handler)
        before = self._getsignal(signalnum)
        default = signal.default_int_handler if signalnum == signal.SIGINT else signal.SIG_DFL
        # the script's default is diagnose's watch: the run still ends with its report
        real_signal(signalnum, self._ours[signalnum] if handler == default else handler)
        self._script[signalnum] = handler
        return before

    def _getsignal(self, signalnum: int) -> Any:
        """``signal.getsignal`` as the script sees it."""
        if signalnum in self._ours:
            return self._script.get(signalnum, self._saved[signalnum])
        assert self._functions is not None
        return self._functions[1](signalnum)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.SIGINT
        raise KeyboardInterrupt

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.received = signal.Signals(signum)
        raise Terminated(self.received.name)

    def cause(self, exc: BaseException) -> str:
        """What stopped the run: the signal's name, or "KeyboardInterrupt" raised by the
        script itself (or by a handler of its own)."""
        if isinstance(exc, Terminated):
            return exc.args[0] if exc.args and exc.args[0] == "SIGHUP" else "SIGTERM"
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


@contextlib.contextmanager
def stops_raise() -> Iterator[None]:
    """While entered (in the main thread), a SIGTERM or SIGHUP that would end the process at
    once raises ``Terminated`` instead, so that what is open is closed on the way out (a
    verification's re-runs and their temporary folder); a handler set by someone else is
    left alone."""
    saved: dict[int, Any] = {}

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    if threading.current_thread() is threading.main_thread():
        for signum in _STOPPING:
            if signal.getsignal(signum) == signal.SIG_DFL:
                saved[signum] = signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
