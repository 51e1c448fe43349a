"""Apply a fix's patch from a saved report to the script it was made from.

``diagnose apply REPORT.json FIX_ID`` writes the patch into the script and keeps the original
beside it as ``SCRIPT.diagnose-bak``. It refuses when the script changed since the report was
made. ``--dry-run`` prints the diff and writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from diagnose.errors import ExitStatus, UsageError
from diagnose.safetext import one_line, safe


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a report written by --report")
    parser.add_argument("fix_id", metavar="FIX_ID", help="the fix to apply, e.g. use-bf16")
    parser.add_argument("--script", metavar="PATH",
                        help="the script to patch (default: the one named in the report)")
    parser.add_argument("--no-backup", action="store_true",
                        help="do not keep a copy of the original script")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the diff without writing anything")


def main(args: argparse.Namespace) -> int:
    from diagnose.patches.apply import apply_with_backup
    from diagnose.report import Report, ReportError

    try:
        report = Report.load(args.report)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    script = Path(args.script) if args.script else _locate(report.script.path, args.report)
    path, backup, diff = apply_with_backup(
        report, args.fix_id, backup=not args.no_backup, script_path=script,
        dry_run=args.dry_run)
    if args.dry_run:
        sys.stdout.write(safe(diff))
        return ExitStatus.CLEAN
    kept = f" (original kept as {one_line(backup)})" if backup else ""
    print(f"applied {one_line(args.fix_id)} to {one_line(path)}{kept}")
    return ExitStatus.CLEAN


def _locate(script: str, report_file: str) -> Path:
    """The report's script as given, else relative to the report's folder."""
    path = Path(script)
    if path.is_file() or path.is_absolute():
        return path
    beside = Path(report_file).resolve().parent / path
    return beside if beside.is_file() else path
