"""Open a saved report: the terminal UI on a terminal, text (or --format) otherwise.

Without a terminal on both stdin and stdout the UI is never started, so that
``diagnose show r.json | cat`` and CI logs get the text report and return at once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from diagnose.errors import ExitStatus, UsageError
from diagnose.report import Report, ReportError

FORMATS = ("tui", "text", "json", "markdown")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("report", metavar="REPORT.json", help="a report written by --report")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="what to show (default: tui when stdin and stdout are terminals, else text)",
    )


def main(args: argparse.Namespace) -> int:
    path = Path(args.report)
    try:
        report = Report.load(path)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    fmt = args.format or ("tui" if _on_terminal() else "text")
    if fmt == "tui" and _on_terminal():
        from tui import run_report  # lazily: the core never imports the TUI

        status = run_report(report, report_path=path)
        return ExitStatus.CLEAN if status == 0 else ExitStatus.USAGE
    if fmt == "tui":
        fmt = "text"  # asked for the UI without a terminal: show what can be shown
    from diagnose.render import render

    sys.stdout.write(render(report, fmt).rstrip("\n") + "\n")
    return ExitStatus.CLEAN


def _on_terminal() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False
