"""The training-config capture, entered beside a tracer.

The tracer watches values; what precision, optimizer, lr, scaler and clipping the run used is
``diagnose.capture``'s business. ``CapturedConfig`` is the small context manager that puts a
``ConfigCapture`` in place for as long as it is entered (again and again, as a tracer around
each epoch is) and turns its snapshot into the report's ``Config``. The runner and the framework
callbacks make one and hand it to their Tracer; a plain ``Tracer()`` makes its own, so
``with Tracer() as t: ...; t.report()`` has the config as before. Capture is evidence, never a
reason to stop a run: a capture that cannot be made or read leaves the config unknown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from diagnose.report import Config


class CapturedConfig:
    """A ``ConfigCapture`` installed while entered; ``config()`` is what it saw."""

    def __init__(self) -> None:
        self.capture: Any = None  # the ConfigCapture, once made (None: capture unavailable)

    def __enter__(self) -> CapturedConfig:
        if self.capture is None:
            self.capture = _make_capture()
        elif self.capture is not None:
            with contextlib.suppress(Exception):
                self.capture.install()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.capture is not None:
            with contextlib.suppress(Exception):
                self.capture.uninstall()

    def config(self, modules: Iterable[Any] = ()) -> Config:
        """The captured config as the report's model; unknown when there is none.
        ``modules``: the models the tracer saw run, whose parameters tell the precision of a
        run that updates its weights by hand (no optimizer holds them)."""
        if self.capture is None:
            return Config()
        try:
            return Config.model_validate(self.capture.snapshot(list(modules)))
        except Exception:
            return Config()


def _make_capture() -> Any:
    try:
        from diagnose.capture import ConfigCapture
    except ImportError:
        return None
    try:
        capture = ConfigCapture()
        capture.install()
    except Exception:
        return None
    return capture
