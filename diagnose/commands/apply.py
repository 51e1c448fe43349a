"""Apply a fix's patch from a saved report to the script it was made from.

``diagnose apply REPORT.json FIX_ID`` writes the patch into the script and keeps the original
beside it as ``SCRIPT.diagnose-bak`` (``.diagnose-bak.1``, ... when that name is taken). Only
the report's own script is patched: a relative path is looked for in the current folder, then
in the report's folder, and must not lead out of it; the script must still have the sha256 of
the run. ``--force`` lifts both checks; ``--dry-run`` prints the diff and writes nothing.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose.errors import ExitStatus, UsageError
from diagnose.safetext import one_line, safe

if TYPE_CHECKING:
    from diagnose.patches.apply import Applied


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a report written by --report")
    parser.add_argument("fix_id", metavar="FIX_ID", help="the fix to apply, e.g. use-bf16")
    parser.add_argument(
        "--script",
        metavar="PATH",
        help="the script to patch (default: the one named in the report)",
    )
    parser.add_argument(
        "--no-backup", action="store_true", help="do not keep a copy of the original script"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the diff without writing anything"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="patch even a script outside the report's and the current folder, "
        "or one whose sha256 is not the report's (missing or different)",
    )


def main(args: argparse.Namespace) -> int:
    from diagnose.patches.apply import apply_with_backup
    from diagnose.report import Report, ReportError

    try:
        report = Report.load(args.report)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    applied = apply_with_backup(
        report,
        args.fix_id,
        backup=not args.no_backup,
        script_path=args.script,
        dry_run=args.dry_run,
        report_dir=Path(os.path.abspath(args.report)).parent,
        force=args.force,
    )
    if applied.command is not None:
        print(_command(report.script.path, applied.command))
        return ExitStatus.CLEAN
    if args.dry_run:
        # Raw into a pipe (it feeds `patch`); inert on a terminal, like every other output.
        sys.stdout.write(applied.diff if not sys.stdout.isatty() else safe(applied.diff))
        return ExitStatus.CLEAN
    print(_summary(args.fix_id, applied))
    return ExitStatus.CLEAN


def _command(script: str, argv: list[str]) -> str:
    """The setting lives in the command line: nothing is written, the command to run is shown
    (quoted for a shell, and inert on a terminal)."""
    return one_line(f"nothing written: run instead: python {shlex.join([script, *argv])}")


def _summary(fix_id: str, applied: Applied) -> str:
    """``applied use-bf16 to train.py (original kept as train.py.diagnose-bak)``, naming the
    link too when the script was a symlink."""

    notes = []
    if os.path.islink(applied.named):
        notes.append(f"the target of {one_line(applied.named)}")
    if applied.backup is not None:
        notes.append(f"original kept as {one_line(_relative(applied.backup))}")
    extra = f" ({'; '.join(notes)})" if notes else ""
    return f"applied {one_line(fix_id)} to {one_line(_relative(applied.path))}{extra}"


def _relative(path: Path) -> Path:
    """``path`` relative to the current folder when it lies inside it, else as it is."""
    cwd = Path(os.path.realpath(os.getcwd()))
    return path.relative_to(cwd) if path.is_relative_to(cwd) else path
