"""The exceptions the Tracer stops a run with, carrying what the report needs."""

from __future__ import annotations

from diagnose.report import Event, Frame, StepRecord
from diagnose.stops import RunStopped


class _Carries:
    """The event, the frames before it and the step history; ``str()`` is the verdict."""

    def __init__(self, event: Event, frames: list[Frame], history: list[StepRecord]) -> None:
        super().__init__(event.message)
        self.event = event
        self.frames = frames
        self.history = history

    def __reduce__(self):  # picklable across processes (the runner may use subprocesses)
        return (type(self), (self.event, self.frames, self.history))


class NonFiniteDetected(_Carries, RuntimeError):
    """Raised by the Tracer at the first inf/nan; ``str()`` is the one-line verdict."""


class NonFiniteStop(_Carries, RunStopped):
    """What the command line's Tracer raises at the first inf/nan (``Tracer(stop_with=...)``):
    ``NonFiniteDetected``'s payload, delivered as a ``RunStopped``."""
