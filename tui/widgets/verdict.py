"""The verdict: what happened, where it was born, the top symptom and the top fix."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from diagnose.report import Report
from tui.summary import fix_line, headline, symptom_line, top_fix, top_symptom, where
from tui.text import Palette, literal


class Verdict(Static):
    """Four lines at the top of every tab, so the answer is always in view."""

    def __init__(self, report: Report, report_path: Path | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report
        self.report_path = report_path  # where the report is kept, said on its own line

    def on_mount(self) -> None:
        self.update(self.build(Palette.from_app(self.app)))

    def build(self, palette: Palette) -> Text:
        report = self.report
        lines = [headline(report, palette)]
        if report.event is not None:
            lines.append(Text.assemble(("where   ", "bold"), where(report)))
            if report.event.kind == "exception" or report.status == "exception":
                lines.append(Text.assemble(("error   ", "bold"), _first_line(report.event.message)))
        if report.status not in ("clean", "untrained") or report.symptoms:
            lines.append(
                Text.assemble(
                    ("symptom ", "bold"),
                    symptom_line(top_symptom(report)),
                    ("   fix ", "bold"),
                    fix_line(top_fix(report)),
                )
            )
        for warning in report.warnings:
            lines.append(Text.assemble(("⚠ ", f"bold {palette.warning}"), literal(warning)))
        if self.report_path is not None:
            path = self.report_path  # its name first: a narrow terminal cuts the folder
            lines.append(
                Text.assemble(
                    ("report  ", "bold"),
                    literal(path.name),
                    " in ",
                    literal(str(path.parent)),
                    style="dim",
                )
            )
        for line in lines:
            line.no_wrap = True
            line.overflow = "ellipsis"
        text = Text("\n").join(lines)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text


def _first_line(message: str) -> Text:
    first = (message or "").strip().splitlines()
    return literal(first[0] if first else "")
