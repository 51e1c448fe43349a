"""Open a saved report: the terminal UI on a terminal, text (or --format) otherwise.

Without a terminal on both stdin and stdout the UI is never started, so that
``diagnose show r.json | cat`` and CI logs get the text report and return at once.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from diagnose.commands.output import add_format_argument, choose_format, show
from diagnose.errors import ExitStatus, UsageError
from diagnose.report import Report, ReportError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "report",
        metavar="REPORT.json",
        nargs="?",
        help="a saved report (default: the newest a run kept, see `diagnose run --report`)",
    )
    add_format_argument(parser)


def main(args: argparse.Namespace) -> int:
    path = Path(args.report) if args.report is not None else _newest()
    try:
        report = Report.load(path)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    status = show(report, choose_format(args.format), report_path=path)
    return ExitStatus.CLEAN if status == 0 else ExitStatus.INTERNAL


def _newest() -> Path:
    """The newest report a run kept in the default place; a UsageError when there is none."""
    from diagnose.reportstore import newest, report_dir

    found = newest()
    if found is None:
        raise UsageError(f"no saved report in {report_dir()}: run `diagnose SCRIPT` first")
    return found
