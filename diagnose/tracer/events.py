"""The exception raised at the first non-finite value, carrying what the report needs."""

from __future__ import annotations

from diagnose.report import Event, Frame, StepRecord


class NonFiniteDetected(RuntimeError):
    """Raised by the Tracer at the first inf/nan; ``str()`` is the one-line verdict."""

    def __init__(self, event: Event, frames: list[Frame], history: list[StepRecord]) -> None:
        super().__init__(event.message)
        self.event = event
        self.frames = frames
        self.history = history

    def __reduce__(self):  # picklable across processes (the runner may use subprocesses)
        return (type(self), (self.event, self.frames, self.history))
