"""What ``--verify`` is doing, one update at a time: which fix, which candidate, how far it got.

A verify re-run takes minutes; without a word the terminal looks hung. ``Progress`` is one
update: the fix, the value tried and its place on a ladder, the step budget of the patched
run, the time it has taken, and at its end the steps it reached and its verdict. While a run
goes on, ``run_ticking`` sends a tick about every second (the time so far); the patched run is
another process, so the steps it reached are known when it ends. ``terminal_progress`` writes
each update as one line on stderr (redrawn in place on a terminal; in a log, plain lines
without the ticks), and the TUI posts each to its screen from its worker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

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
    of_steps: int | None = None  # the patched run's step budget (None: the script's end)
    elapsed: float | None = None  # seconds this run has taken so far, or in all at its end
    tick: bool = False  # a running line redrawn with the time so far

    @property
    def line(self) -> str:
        """The update in plain words, on one line."""
        what = f"verify {self.fix_id}"
        if self.candidate is not None:
            what += f": {self.candidate} ({self.index}/{self.total})"
        if self.verdict is None:
            budget = "" if self.of_steps is None else f" up to {self.of_steps} steps"
            spent = "" if self.elapsed is None else f", {_seconds(self.elapsed)} so far"
            return one_line(f"{what}: running{budget}{spent}")
        reached = ""
        if self.steps is not None:
            of = "" if self.of_steps is None else f" of {self.of_steps}"
            reached = f", reached step {self.steps}{of}"
        spent = "" if self.elapsed is None else f" in {_seconds(self.elapsed)}"
        return one_line(f"{what}: {self.verdict}{reached}{spent}")


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"
    minutes, seconds = divmod(int(value), 60)
    return f"{minutes} min {seconds:02d} s"


OnProgress = Callable[[Progress], None]
TICK_S = 1.0


def terminal_progress(stream: TextIO | None = None) -> OnProgress:
    """A callback writing each update to ``stream`` (stderr): in place on a terminal, where a
    run's line is replaced by its outcome; as plain ``diagnose: ...`` lines otherwise."""
    out = stream if stream is not None else sys.stderr
    tty = _isatty(out)

    def show(update: Progress) -> None:
        if update.tick and not tty:
            return  # a log gets the start and the end of each run, not a line a second
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


def run_ticking(
    command: list[str], timeout: float, on_tick: Callable[[float], None] | None, **popen: Any
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(command, capture_output=True, text=True, timeout=...)``, calling
    ``on_tick(seconds so far)`` about every ``TICK_S`` while it runs. Past ``timeout`` the
    process is killed and ``TimeoutExpired`` raised, as ``subprocess.run`` does. The command runs
    in a process group of its own, so however this ends (its timeout, Ctrl-C, SIGTERM), nothing
    it started outlives it."""
    started = time.monotonic()
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: killed as one, every process it started
        **popen,
    ) as proc:
        try:
            while True:
                left = timeout - (time.monotonic() - started)
                try:
                    out, err = proc.communicate(timeout=max(0.0, min(TICK_S, left)))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - started >= timeout:
                        raise subprocess.TimeoutExpired(command, timeout) from None
                    if on_tick is not None:
                        on_tick(time.monotonic() - started)
        except BaseException:  # the timeout, Ctrl-C, SIGTERM: the run does not outlive its verify
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)
