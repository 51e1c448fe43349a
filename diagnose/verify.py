"""``--verify``: re-run the script with each top fix's patch and keep the fixes that work.

Each patch is applied to a copy of the script in a temporary folder (the user's file is never
touched), and the copy runs under diagnose in a subprocess for ten times the optimizer steps
that led to the event (at least those plus a margin): a fix that only slows a divergence down,
as an lr divided by ten does, fails within that. One rule for every kind of fix: a run that
stays finite and whose loss falls marks the fix ``verified: true``, and its note says both; a
run that still blows up (or raises), or whose loss does not fall, marks it ``false``; a run
still going at the timeout, or with no loss recorded, is not judged. Verified fixes then rank
first.

A fix changes the script, the command line (a setting given as a flag) or a config file the
run read; the changed files are written into mirrors of the working directory or the script's
folder (``verify_tree``), so that the run reads them by the paths it reads the originals by,
with the script's own folder on ``PYTHONPATH`` so that sibling modules still import.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diagnose.formatting import num
from diagnose.interrupts import stops_raise
from diagnose.report import Fix, Report
from diagnose.safetext import strip_escapes
from diagnose.verify_progress import OnProgress, Progress, run_ticking
from diagnose.verify_tree import place

if TYPE_CHECKING:
    from diagnose.patches import PatchResult

DEFAULT_MARGIN = 10
HORIZON = 10  # times the steps that led to the event
DEFAULT_TIMEOUT = 300.0


@dataclass
class Outcome:
    """What one patched run did."""

    verified: bool | None
    note: str
    data: dict[str, Any] | None = field(default=None, repr=False)
    """The patched run's report (JSON data), when it wrote one."""


def verify_fixes(
    report: Report,
    top: int = 3,
    margin_steps: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    script_path: str | Path | None = None,
    progress: OnProgress | None = None,
) -> Report:
    """Try the top ``top`` fixes that have a patch; set ``verified`` and re-rank the fixes.

    The lower-learning-rate fix is searched over a ladder of values (``verify_lr``); the
    others get one patched run each. ``progress`` hears of each run as it starts and ends.
    A SIGTERM or SIGHUP meanwhile raises ``Terminated``: the run under way is ended, its
    temporary folder removed, and the signal's stop goes on up to the caller.
    """
    from diagnose.verify_lr import search_lr, searchable

    script = Path(script_path or report.script.path)
    max_steps = steps_to_run(report, margin_steps)
    with stops_raise():
        for fix in report.fixes[:top]:
            if searchable(fix, report):
                search_lr(fix, script, report, max_steps, timeout, progress)
            else:
                _verify_one(fix, script, report, max_steps, timeout, progress)
    report.fixes = rank_verified(report.fixes)
    return report


def _verify_one(
    fix: Fix,
    script: Path,
    report: Report,
    max_steps: int | None,
    timeout: float,
    progress: OnProgress | None,
) -> None:
    """One patched run of ``fix``'s patch."""
    from diagnose.patches import make_patch

    result = make_patch(fix.id, script, report)
    if not result.runnable:
        _note(fix, f"not verified: {result.note or 'no patch to run'}")
        return
    started = time.monotonic()
    if progress is not None:
        progress(Progress(fix.id, of_steps=max_steps))
    # a finite run's fixes are for a run that does not learn (a weak sign included)
    outcome = run_change(
        script,
        result,
        report.script.argv,
        max_steps,
        timeout,
        report.status in FINITE_RUN,
        on_tick=ticker(progress, Progress(fix.id, of_steps=max_steps)),
    )
    if progress is not None:
        progress(
            Progress(
                fix.id,
                steps=steps_reached(outcome.data),
                verdict=outcome.note,
                of_steps=max_steps,
                elapsed=time.monotonic() - started,
            )
        )
    fix.verified = outcome.verified
    _note(fix, outcome.note)


def ticker(progress: OnProgress | None, running: Progress) -> Callable[[float], None] | None:
    """The tick callback of a run: ``running`` redrawn with the seconds so far."""
    if progress is None:
        return None
    return lambda seconds: progress(replace(running, elapsed=seconds, tick=True))


def steps_reached(data: dict[str, Any] | None) -> int | None:
    """Optimizer steps a patched run completed, from its report."""
    if not isinstance(data, dict):
        return None
    note = data.get("history_note")
    if isinstance(note, dict) and isinstance(note.get("steps"), int):
        return note["steps"]
    history = data.get("history")
    if isinstance(history, list) and history and isinstance(history[-1], dict):
        last = history[-1].get("step")
        return last + 1 if isinstance(last, int) else None
    return None


def steps_to_run(report: Report, margin_steps: int | None = None) -> int | None:
    """Ten times the steps that led to the event, at least those plus a margin (None: run
    the script to its end)."""
    event = report.event
    if event is None or event.step is None:
        return None
    margin = DEFAULT_MARGIN if margin_steps is None else margin_steps
    steps = event.step + 1
    return max(steps * HORIZON, steps + max(margin, 0))


def rank_verified(fixes: list[Fix]) -> list[Fix]:
    """Verified fixes first, fixes proven not to work last; the engine's order within each."""
    order = {True: 0, None: 1, False: 2}
    return sorted(fixes, key=lambda f: order[f.verified])


def run_patched(
    script: Path,
    source: str,
    argv: list[str],
    max_steps: int | None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Outcome:
    """Run ``source`` as ``script`` (same name, same argv) under diagnose in a subprocess."""
    from diagnose.patches import PatchResult

    return run_change(script, PatchResult(None, None, source), argv, max_steps, timeout)


def run_change(
    script: Path,
    change: PatchResult,
    argv: list[str],
    max_steps: int | None,
    timeout: float = DEFAULT_TIMEOUT,
    must_learn: bool = False,
    on_tick: Callable[[float], None] | None = None,
) -> Outcome:
    """Run the script with one change (its new text, the argv to run instead, or a config
    file's new text) under diagnose in a subprocess; the user's files are never written.
    ``must_learn``: the change is to fix a run that did not learn (see ``_judge``);
    ``on_tick`` hears the seconds so far about every second while the run goes on.

    The changed script and config file are written into mirrors of the working directory or
    the script's folder (``verify_tree``), so that the run reads the changed copies by the
    paths it reads the originals by.
    """
    with tempfile.TemporaryDirectory(prefix="diagnose-verify-") as tmp:
        argv = list(change.argv if change.argv is not None else argv)
        source = change.new_source
        if source is None:
            source = script.read_text(encoding="utf-8")
        file = None
        if change.file is not None and change.file_source is not None:
            file = (Path(change.file), change.file_source)
        placed = place(Path(tmp), script, source, argv, file)
        if placed is None:
            return Outcome(
                None,
                "not verified: the changed files cannot be put where the run reads them "
                "(outside the working directory and the script's folder, and not named in argv)",
            )
        copy, argv, cwd = placed.script, placed.argv, placed.cwd
        report_path = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "diagnose",
            "run",
            "--format",
            "json",
            "--report",
            str(report_path),
        ]
        if max_steps is not None:
            command += ["--max-steps", str(max_steps)]
        command += [str(copy), *argv]
        try:
            done = run_ticking(
                command, timeout, on_tick, env=_env(script), stdin=subprocess.DEVNULL, cwd=cwd
            )
        except subprocess.TimeoutExpired:
            return Outcome(
                None, f"not verified: the patched run was still going after {timeout:g}s"
            )
        if not report_path.exists():
            last = _last_line(done.stderr) or "no output"
            return Outcome(None, f"patched run could not be checked: {last}")
        data = json.loads(report_path.read_text(encoding="utf-8"))
    outcome = _judge(data, max_steps, must_learn, _ending(done.returncode, done.stderr))
    outcome.data = data
    return outcome


FINITE_RUN = ("clean", "silent")


def _judge(data: dict, max_steps: int | None, must_learn: bool = False, died: str = "") -> Outcome:
    """What the patched run's report says of the fix, by one rule for every kind of fix: it
    is verified when the patched run stays finite *and* its loss falls (a run that stays
    finite because nothing moves fixes nothing), and the note says both. ``must_learn``: the
    run being fixed was finite and did not learn, so a patched run with a learning finding
    has not been fixed. ``died``: how the process ended, for a report the run never replaced."""
    reached = steps_reached(data)
    if reached is not None and (max_steps is None or reached < max_steps):
        steps = f"{reached} steps, the whole run"  # it ended before the step budget
    else:
        steps = f"{max_steps} steps" if max_steps is not None else "the whole run"
    status = data.get("status")
    if status in FINITE_RUN:
        found = "; ".join(_titles(data)) or "a finding of the learning watch"
        if status == "silent" and must_learn:
            return Outcome(False, f"patched run still does not learn: {found}"[:200])
        but = f"; but: {found}" if status == "silent" else ""
        loss = loss_words(data)
        if loss is None:
            return Outcome(
                None,
                f"not verified: patched run stayed finite for {steps}, but its loss was not "
                f"recorded on two steps (a fix counts when the run stays finite and its loss "
                f"falls){but}"[:200],
            )
        return Outcome(loss[1], f"patched run stayed finite for {steps}; {loss[0]}{but}"[:200])
    if status == "untrained":
        code = data.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool) and code:
            return Outcome(
                False, f"patched run exited with status {code} before its first training step"
            )
        return Outcome(None, "not verified: the patched run took no training step")
    if status == "interrupted":
        cause = (data.get("interruption") or {}).get("cause")
        if cause == "unfinished":
            return Outcome(False, f"patched run died before it could report: {died}"[:200])
        return Outcome(None, f"not verified: the patched run was stopped by {cause or 'a signal'}")
    event = data.get("event") or {}
    where = ", ".join(
        str(x)
        for x in (
            event.get("phase"),
            event.get("module"),
            None if event.get("step") is None else f"step {event['step']}",
        )
        if x
    )
    if status == "nonfinite":
        return Outcome(
            False,
            f"patched run still produced {event.get('value') or 'nan/inf'}"
            + (f" ({where})" if where else ""),
        )
    if status == "exception" or event.get("kind") == "exception":
        return Outcome(
            False,
            f"patched run raised {event.get('exception_type') or 'an error'}: "
            f"{event.get('message', '')}"[:200],
        )
    return Outcome(None, f"not verified: the patched run ended as {status!r}"[:200])


def loss_span(data: dict[str, Any] | None) -> tuple[float | None, float | None]:
    """The first and the last finite loss of a patched run's history; None for both with
    fewer than two, which cannot show whether the loss fell."""
    history = data.get("history") if isinstance(data, dict) else None
    losses = [
        float(row["loss"])
        for row in history or []
        if isinstance(row, dict)
        and isinstance(row.get("loss"), int | float)
        and math.isfinite(row["loss"])
    ]
    return (losses[0], losses[-1]) if len(losses) > 1 else (None, None)


def loss_words(data: dict[str, Any] | None) -> tuple[str, bool] | None:
    """What a patched run's loss did, in words, and whether it fell; None when not recorded."""
    first, last = loss_span(data)
    if first is None or last is None:
        return None
    if last < first:
        return f"its loss fell from {num(first)} to {num(last)}", True
    return f"its loss did not fall ({num(first)} -> {num(last)})", False


def _titles(data: dict) -> list[str]:
    """The titles of a report's symptoms, as plain text."""
    return [
        str(s.get("title") or s.get("id"))
        for s in data.get("symptoms") or []
        if isinstance(s, dict) and (s.get("title") or s.get("id"))
    ]


def _ending(returncode: int, stderr: str) -> str:
    """How a process ended, in words: its signal or exit status, and its last line of stderr."""
    if returncode < 0:
        try:
            how = f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"killed by signal {-returncode}"
    else:
        how = f"exited {returncode}"
    last = _last_line(stderr)
    return f"{how}: {last}" if last else how


def _last_line(stderr: str) -> str:
    """The last line a process wrote to stderr, without escape sequences ("" for none)."""
    return (strip_escapes(stderr).strip().splitlines() or [""])[-1]


def _env(script: Path) -> dict[str, str]:
    """The user's environment, plus the script's folder and diagnose itself on the path."""
    package_root = Path(__file__).resolve().parent.parent
    extra = [str(script.resolve().parent), str(package_root)]
    current = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*extra, *([current] if current else [])]),
        "PYTHONUNBUFFERED": "1",
    }


def _note(fix: Fix, note: str) -> None:
    """Keep the verification's outcome beside the fix (an extra key of the report)."""
    fix.verify_note = note
