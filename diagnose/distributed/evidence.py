"""Per-rank evidence files in the run folder: written atomically, read by whoever combines."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TERMINAL = ("nonfinite", "exception", "interrupted", "stopped")
"""A rank that ended with one of these ends the whole run."""


def evidence_path(run_dir: Path, rank: int) -> Path:
    return run_dir / f"rank-{rank}.json"


def write_evidence(run_dir: Path, rank: int, data: dict[str, Any]) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a file."""
    run_dir.mkdir(parents=True, exist_ok=True)
    final = evidence_path(run_dir, rank)
    tmp = final.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, final)


def read_evidence(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Every complete evidence file in the folder, by rank; unreadable files are skipped."""
    found: dict[int, dict[str, Any]] = {}
    try:
        names = os.listdir(run_dir)
    except OSError:
        return found
    for name in names:
        if not (name.startswith("rank-") and name.endswith(".json")):
            continue
        try:
            rank = int(name[5:-5])
            data = json.loads((run_dir / name).read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if isinstance(data, dict):
            found[rank] = data
    return found


def peer_terminal(run_dir: Path, rank: int) -> tuple[int, dict[str, Any]] | None:
    """The earliest other rank that ended the run (event, exception or stop), if any."""
    ended = [(d.get("time", 0.0), r, d) for r, d in read_evidence(run_dir).items()
             if r != rank and d.get("status") in TERMINAL]
    if not ended:
        return None
    _, r, d = min(ended, key=lambda item: (item[0], item[1]))
    return r, d


def claim(run_dir: Path, name: str) -> bool:
    """True for exactly one caller across processes (O_EXCL create)."""
    try:
        fd = os.open(run_dir / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True
