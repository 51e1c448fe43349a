"""Where a run's report is kept when ``--report`` names no place: nothing a run saw is lost.

The place is ``$DIAGNOSE_REPORT_DIR`` when set, else ``$XDG_STATE_HOME/diagnose/reports``
(``~/.local/state/diagnose/reports``): per user state, as the XDG base directories define it,
rather than the working directory, which may be a git checkout (a stray file in its status),
read-only, or shared by several users. ``diagnose show`` with no argument opens the newest
report there; the folder keeps the newest ``KEEP`` reports (``$DIAGNOSE_REPORTS_KEEP``) and
prunes the oldest after each run.

A report's name holds the time, the script, the process and, under torchrun, the rank, so
two runs (or two ranks of one launch) never write the same file.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import time
from pathlib import Path

KEEP = 50
MAX_KEEP = 100_000
SUFFIX = ".json"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class StoreError(Exception):
    """The report folder cannot be used; the message is one line for the user."""


def report_dir() -> Path:
    """The folder default reports go to (not created here)."""
    chosen = os.environ.get("DIAGNOSE_REPORT_DIR")
    if chosen:
        return Path(chosen).expanduser()
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state and os.path.isabs(state) else _home_state()
    return base / "diagnose" / "reports"


def _home_state() -> Path:
    return Path.home() / ".local" / "state"


def keep() -> int:
    """How many reports the folder keeps: ``$DIAGNOSE_REPORTS_KEEP`` (at least 1), else KEEP."""
    raw = os.environ.get("DIAGNOSE_REPORTS_KEEP", "")
    try:
        value = int(raw[:8]) if raw.strip() else KEEP
    except ValueError:
        return KEEP
    return min(max(value, 1), MAX_KEEP)


def new_report_path(script: str, rank: int | None = None, now: float | None = None) -> Path:
    """A fresh path for this run's report, its folder made (owner only); StoreError when the
    folder cannot be made or written to."""
    folder = report_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise StoreError(f"cannot make the report folder {folder}: {exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(f"cannot write in the report folder {folder}")
    moment = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(moment))
    millis = int(moment * 1000) % 1000
    stem = _UNSAFE.sub("_", Path(script).stem)[:40] or "script"
    ranked = f"-rank{rank}" if rank is not None else ""
    return folder / f"{stamp}.{millis:03d}-{stem}-{os.getpid()}{ranked}{SUFFIX}"


def saved_reports(folder: Path | None = None) -> list[Path]:
    """The folder's reports, oldest first (by the time in their names, then by name)."""
    folder = report_dir() if folder is None else folder
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    found = [
        Path(e.path)
        for e in entries
        if e.name.endswith(SUFFIX) and not e.name.startswith(".") and _is_file(e)
    ]
    return sorted(found, key=lambda p: p.name)


def newest(folder: Path | None = None) -> Path | None:
    """The newest report in the folder, or None when it holds none."""
    reports = saved_reports(folder)
    return reports[-1] if reports else None


def prune(folder: Path | None = None, limit: int | None = None) -> int:
    """Remove the oldest reports beyond ``limit`` (default ``keep()``); how many went."""
    reports = saved_reports(folder)
    limit = keep() if limit is None else limit
    removed = 0
    for path in reports[: max(len(reports) - limit, 0)]:
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
        for export in path.parent.glob(f"{glob.escape(path.stem)}.*"):  # the UI's exports
            with contextlib.suppress(OSError):
                export.unlink()
    return removed


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False
