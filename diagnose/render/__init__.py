"""One renderer per output format: ``render(report, fmt)`` for text, markdown and json.

The TUI is not here: it lives in the top-level ``tui`` package, which the core never imports.
"""

from __future__ import annotations

from diagnose.report import Report

FORMATS = ("text", "markdown", "json")


def render(report: Report, fmt: str = "text", *, color: bool = False) -> str:
    """Render ``report`` as ``fmt`` ("text", "markdown" or "json")."""
    if fmt == "json":
        return report.to_json()
    if fmt == "markdown":
        from diagnose.render.markdown import render_markdown

        return render_markdown(report)
    if fmt == "text":
        from diagnose.render.text import render_text

        return render_text(report, color=color)
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
