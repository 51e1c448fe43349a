"""The Textual terminal UI of diagnose: a keyboard walkthrough of one diagnosis.

Imported lazily by the CLI (``diagnose run`` / ``diagnose show``); the core package never
imports it, so that ``diagnose match`` and the renderers work without loading Textual.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from diagnose.report import Report

__all__ = ["run_report"]


def run_report(report: Report, *, report_path: Path | None = None) -> int:
    """Show ``report`` in the terminal UI until the user quits; blocks.

    Returns 0 when the user closed the app normally, non-zero when the app itself failed
    (Textual has already printed why). The caller decides the process's exit status from the
    report (e.g. 1 for a diagnosed problem); this value only says whether showing it worked.
    """
    from tui.app import DiagnoseApp

    app = DiagnoseApp(report, report_path=report_path)
    app.run()
    return int(app.return_code or 0)
