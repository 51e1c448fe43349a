"""One renderer per output format, all behind one interface: ``render(report, fmt)``.

``RENDERERS`` is the registry: each format's name, what it is called in a title, the suffix of
a file holding it, and the function that writes a report in it. Everything that offers formats
(``--format``'s choices, the UI's exports) reads them from here, so a format added here is
offered everywhere at once. The TUI is not here: it lives in the top-level ``tui`` package,
which the core never imports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from diagnose.report import Report


@dataclass(frozen=True)
class Renderer:
    """One output format; ``write(report, color)`` returns the whole rendered report."""

    name: str
    title: str
    suffix: str
    write: Callable[[Report, bool], str]


def _text(report: Report, color: bool) -> str:
    from diagnose.render.text import render_text

    return render_text(report, color=color)


def _json(report: Report, color: bool) -> str:
    return report.to_json()


def _markdown(report: Report, color: bool) -> str:
    from diagnose.render.markdown import render_markdown

    return render_markdown(report)


RENDERERS: dict[str, Renderer] = {
    r.name: r
    for r in (
        Renderer("text", "text", ".txt", _text),
        Renderer("json", "JSON", ".json", _json),
        Renderer("markdown", "Markdown", ".md", _markdown),
    )
}
FORMATS: tuple[str, ...] = tuple(RENDERERS)  # the built-in ones; the registry may grow


def render(report: Report, fmt: str = "text", *, color: bool = False) -> str:
    """Render ``report`` as ``fmt``, a name in ``RENDERERS``; ``color`` only for a terminal."""
    renderer = RENDERERS.get(fmt)
    if renderer is None:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(RENDERERS)}")
    return renderer.write(report, color)
