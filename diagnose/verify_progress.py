"""What ``--verify`` is doing, one update at a time: which fix, which candidate, how far it got.

A verify re-run takes minutes; without a word the terminal looks hung. ``Progress`` is one
update; ``terminal_progress`` writes each as one line on stderr (redrawn in place on a
terminal, plain lines in a log), and the TUI posts each to its screen from its worker.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from diagnose.safetext import one_line


@dataclass(frozen=True)
class Progress:
    """One update. ``candidate``: the value tried (``lr 0.001``), None for a fix's only run;
    ``index``/``total``: its place in the search; ``steps``: steps reached once it ended;
    ``verdict``: how that run ended (None while it runs)."""

    fix_id: str
    candidate: str | None = None
    index: int = 1
    total: int = 1
    steps: int | None = None
    verdict: str | None = None

    @property
    def line(self) -> str:
        """The update in plain words, on one line."""
        what = f"verify {self.fix_id}"
        if self.candidate is not None:
            what += f": {self.candidate} ({self.index}/{self.total})"
        if self.verdict is None:
            return one_line(f"{what}: running")
        reached = "" if self.steps is None else f", reached step {self.steps}"
        return one_line(f"{what}: {self.verdict}{reached}")


OnProgress = Callable[[Progress], None]


def terminal_progress(stream: TextIO | None = None) -> OnProgress:
    """A callback writing each update to ``stream`` (stderr): in place on a terminal, where a
    run's line is replaced by its outcome; as plain ``diagnose: ...`` lines otherwise."""
    out = stream if stream is not None else sys.stderr
    tty = _isatty(out)

    def show(update: Progress) -> None:
        text = f"diagnose: {update.line}"
        if tty:
            end = "\n" if update.verdict is not None else ""
            out.write(f"\r\x1b[K{text}{end}")
        else:
            out.write(text + "\n")
        out.flush()

    return show


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: treat as a log
        return False
