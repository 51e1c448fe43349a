"""How ``run`` and ``show`` show a report: ``--format``'s choices, its default, the showing.

The choices are the terminal UI and then every renderer in ``diagnose.render.RENDERERS``;
the UI is started only when stdin and stdout are both terminals (a Textual app without a
terminal hangs), and is replaced by the text report otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose.render import RENDERERS

if TYPE_CHECKING:
    from diagnose.report import Report

UI = "tui"


def choices() -> tuple[str, ...]:
    """The UI, then every registered renderer, in the registry's order."""
    return (UI, *RENDERERS)


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=choices(),
        default=None,
        help="what to show (default: tui when stdin and stdout are terminals, else text)",
    )


def on_terminal() -> bool:
    """Both stdin and stdout are terminals (False for closed or replaced streams)."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def choose_format(asked: str | None, *, ui: bool = True) -> str:
    """The format to show in: ``asked``, else the UI on a terminal, else text; the UI only
    where it can run (``ui=False``: several processes share the terminal)."""
    fmt = asked or UI
    if fmt == UI and not (ui and on_terminal()):
        return "text"
    return fmt


def show(report: Report, fmt: str, report_path: Path | None = None) -> int:
    """Show ``report`` on stdout in ``fmt``; 0, or the UI's own non-zero status if it failed.

    What a person reads (the UI, text, Markdown) is cut to bounds, each cut naming where
    the full value is (``diagnose.render.bounded``); JSON is data and is shown whole.
    """
    if fmt != "json":
        from diagnose.render.bounded import bounded

        report = bounded(report, report_path)
    if fmt == UI:
        from tui import run_report  # lazily: the core never imports the TUI

        return run_report(report, report_path=report_path)
    from diagnose.render import render

    color = fmt == "text" and sys.stdout.isatty()
    sys.stdout.write(render(report, fmt, color=color).rstrip("\n") + "\n")
    sys.stdout.flush()
    return 0
