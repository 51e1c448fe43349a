"""Warnings located where the user's code called, not in the capture's wrappers.

A library warning issued with ``stacklevel=2`` (or 3, ...) names the frame that many levels
up: its caller. When that caller is the library's own wrapped function, the wrapper stands
between, and the warning would name ``diagnose/capture/patching.py`` instead of the user's
line. While wrappers are installed, ``warnings.showwarning`` is routed through a display that
moves such a warning to the first frame above the wrappers: the frame the warning names
when nothing is wrapped. Only the displayed location changes; which warnings are shown, and
how, stays with the filters and with whatever ``showwarning`` was in place.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

_WRAPPER_FILE = str(Path(__file__).with_name("patching.py"))


class WarningOrigin:
    """Routes ``warnings.showwarning`` through the relocation while installed (then restores)."""

    def __init__(self) -> None:
        self._previous: Callable[..., Any] | None = None
        self._hook: Callable[..., Any] | None = None

    def install(self) -> None:
        if self._hook is not None:
            return
        previous = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
            if _same_file(filename, _WRAPPER_FILE):
                frame = _caller_of_wrappers(sys._getframe(1), lineno)
                if frame is not None:
                    filename, lineno, line = frame.f_code.co_filename, frame.f_lineno, None
            return previous(message, category, filename, lineno, file, line)

        self._previous, self._hook = previous, showwarning
        warnings.showwarning = showwarning

    def restore(self) -> None:
        """Put back the display found at install, unless other code has replaced ours since."""
        if self._hook is None:
            return
        if warnings.showwarning is self._hook:
            warnings.showwarning = self._previous  # type: ignore[assignment]
        self._previous = self._hook = None


def _same_file(a: str, b: str) -> bool:
    return a == b or (Path(a).name == Path(b).name and Path(a).resolve() == Path(b).resolve())


def _caller_of_wrappers(frame: FrameType | None, lineno: int) -> FrameType | None:
    """The first frame above the wrapper frame at ``lineno`` that is not a wrapper's, or None."""
    while frame is not None and not (
        _same_file(frame.f_code.co_filename, _WRAPPER_FILE) and frame.f_lineno == lineno
    ):
        frame = frame.f_back
    while frame is not None and _same_file(frame.f_code.co_filename, _WRAPPER_FILE):
        frame = frame.f_back
    return frame
