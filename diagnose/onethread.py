"""Which thread a watch follows: the first that trains while it is attached.

The tracer's and the learning watch's state describe one training loop: one window of records
per step, one step count, one history. Two threads each training their own model would
interleave their calls in that state, and the records of one would be read and scanned in the
other's step. So a watch follows one thread, the first to call a module, build or step an
optimizer or run a backward pass while it is attached, and leaves every other thread's calls
alone (they run exactly as they would without diagnose). What it did not watch is counted, so
that the report says so instead of taking the steps it saw for the whole run.
"""

from __future__ import annotations

import threading

_get_ident = threading.get_ident


class OneThread:
    """The thread a watch follows, and the optimizer steps of the others it left alone."""

    __slots__ = ("ident", "name", "others")

    def __init__(self) -> None:
        self.ident: int | None = None
        self.name = ""
        self.others: dict[int, list] = {}  # ident -> [thread name, optimizer steps]

    def mine(self) -> bool:
        """Whether the calling thread is the one followed; the first caller becomes it."""
        ident = _get_ident()
        if ident == self.ident:
            return True
        if self.ident is None:
            self.ident = ident
            self.name = threading.current_thread().name
            return True
        return False

    def other_step(self) -> None:
        """An optimizer step in a thread not followed."""
        ident = _get_ident()
        seen = self.others.get(ident)
        if seen is None:
            seen = self.others[ident] = [threading.current_thread().name, 0]
        seen[1] += 1

    def note(self) -> str | None:
        """One line for the report when other threads trained too, else None."""
        steps = sum(n for _, n in self.others.values())
        if not self.others:
            return None
        names = ", ".join(sorted({name for name, _ in self.others.values()}))
        return (
            f"tracer: only thread {self.name!r} was watched; {steps} optimizer "
            f"step{'s' if steps != 1 else ''} in {len(self.others)} other "
            f"thread{'s' if len(self.others) != 1 else ''} ({names}) went unchecked"
        )
