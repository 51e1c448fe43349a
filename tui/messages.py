"""What the app's background workers report back: posted from their threads, handled with ``@on``.

A worker never calls into a widget; it posts one of these, and the handler (on the UI thread)
changes the report and the reactive state that the widgets redraw from.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from diagnose.report import Fix
from diagnose.verify_progress import Progress


@dataclass
class Applied(Message):
    """A fix's patch was written (``detail`` says where the backup went), or ``error`` why not."""

    fix_id: str
    detail: str | None = None
    error: str | None = None


@dataclass
class Verified(Message):
    """A fix was re-run: ``fix`` carries its verdict and note, or ``error`` says why there is none."""

    fix_id: str
    fix: Fix | None = None
    error: str | None = None


@dataclass
class VerifyProgress(Message):
    """A verification moved on: a re-run started or ended (which fix, which candidate, steps)."""

    update: Progress
