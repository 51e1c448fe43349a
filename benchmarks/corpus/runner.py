"""Run one case under the real ``diagnose`` in a subprocess and read back what it said."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.corpus.generate import Case

SCRIPT = "train.py"
TIMEOUT_S = 240.0


@dataclass(frozen=True)
class Outcome:
    """What the tool reported for one case (or why there is no report)."""

    status: str | None  # the report's status; None when no report came back
    exit_code: int | None
    symptoms: tuple[str, ...] = ()
    fixes: tuple[str, ...] = ()
    module: str | None = None
    line: int | None = None
    op: str | None = None
    seconds: float = 0.0
    error: str | None = None  # timed out, no report, unreadable report
    extra: dict = field(default_factory=dict)


def diagnose_command() -> list[str]:
    """The ``diagnose`` console script beside this interpreter, else ``python -m diagnose``."""
    beside = Path(sys.executable).with_name("diagnose")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "diagnose"]


def write_case(case: Case, folder: Path) -> Path:
    """The case's script and its truth written into ``folder``; the script's path."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / SCRIPT
    script.write_text(case.code)
    truth = {"case": case.name, "base": case.base, **case.truth.to_json()}
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return script


def run_case(case: Case, keep: Path | None = None, timeout: float = TIMEOUT_S) -> Outcome:
    folder = Path(tempfile.mkdtemp(prefix="corpus-")) if keep is None else keep
    try:
        script = write_case(case, folder)
        return run_script(script, folder / "report.json", timeout)
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)


def run_script(script: Path, report: Path, timeout: float = TIMEOUT_S) -> Outcome:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    command = [*diagnose_command(), "--format", "json", "--report", str(report), str(script)]
    start = time.monotonic()
    try:
        done = subprocess.run(
            command,
            cwd=script.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Outcome(
            None, None, seconds=time.monotonic() - start, error=f"timed out after {timeout:g}s"
        )
    seconds = time.monotonic() - start
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError) as err:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        return Outcome(
            None,
            done.returncode,
            seconds=seconds,
            error=f"no report ({err.__class__.__name__}): {tail[0][:160]}",
        )
    return outcome_of(data, done.returncode, seconds)


def outcome_of(data: dict, exit_code: int | None, seconds: float) -> Outcome:
    event = data.get("event") or {}
    location = event.get("location") or {}
    return Outcome(
        status=data.get("status"),
        exit_code=exit_code,
        symptoms=tuple(s.get("id", "") for s in data.get("symptoms") or []),
        fixes=tuple(f.get("id", "") for f in data.get("fixes") or []),
        module=event.get("module"),
        line=location.get("line"),
        op=event.get("op"),
        seconds=seconds,
    )
