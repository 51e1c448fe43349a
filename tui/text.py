"""Turning report values into Rich ``Text``: literal, escaped, coloured by meaning.

Everything that came from the run or the dataset (module names, messages, paths) goes through
``literal``: it is never parsed as markup, and it is ``diagnose.safetext.safe`` text (terminal
escape sequences removed, other control characters made visible), so nothing reaches the
terminal that it would act on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from diagnose.render.numbers import num
from diagnose.report import TensorStats
from diagnose.safetext import one_line, safe

__all__ = [
    "Palette",
    "diff_text",
    "literal",
    "magnitude",
    "num",
    "one_line",
    "plural",
    "safe",
    "stat_cell",
]


@dataclass(frozen=True)
class Palette:
    """Colours resolved from the app's theme, so tables and plots follow theme changes."""

    error: str = "red"
    success: str = "green"
    warning: str = "yellow"
    accent: str = "cyan"
    muted: str = "grey50"

    @classmethod
    def from_app(cls, app: object) -> Palette:
        theme = getattr(app, "current_theme", None)
        if theme is None:
            return cls()
        return cls(
            error=theme.error or cls.error,
            success=theme.success or cls.success,
            warning=theme.warning or cls.warning,
            accent=theme.accent or theme.primary or cls.accent,
        )

    @property
    def bad(self) -> Style:
        """Non-finite values: the theme's error colour, bold so it survives NO_COLOR."""
        return Style(color=self.error, bold=True)


def literal(value: object, style: str | Style = "") -> Text:
    """``value`` as text shown exactly as it is: no markup, control characters escaped."""
    return Text(safe("" if value is None else value), style=style)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 fix``, ``2 fixes``: the count and the noun in the form the count needs."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def magnitude(stats: TensorStats | None, attr: str) -> str:
    """``abs_min`` / ``abs_max`` as a short string; a missing max of a non-finite tensor is
    shown as what it held (JSON has no inf, so a saved report may carry null there)."""
    if stats is None:
        return "-"
    value = getattr(stats, attr)
    if value is None and attr == "abs_max" and not stats.finite:
        return "nan" if stats.nan else "inf"
    return num(value)


def stat_cell(stats: TensorStats | None, attr: str, palette: Palette) -> Text:
    """A table cell for one statistic, in the error colour when the tensor is non-finite."""
    text = magnitude(stats, attr) if attr in ("abs_min", "abs_max") else num(getattr(stats, attr))
    if stats is None:
        return Text("-", justify="right")
    style: str | Style = ""
    if not stats.finite and attr == "abs_max":
        style = palette.bad
    elif attr == "headroom" and stats.near_limit:
        style = Style(color=palette.warning, bold=True)
    return Text(text, style=style, justify="right")


def is_finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def diff_text(patch: str, palette: Palette) -> Text:
    """A unified diff coloured line by line: added green, removed red, hunks in the accent."""
    out = Text()
    for line in safe(patch).splitlines():
        if line.startswith(("+++", "---")):
            style: str | Style = Style(bold=True)
        elif line.startswith("@@"):
            style = Style(color=palette.accent)
        elif line.startswith("+"):
            style = Style(color=palette.success)
        elif line.startswith("-"):
            style = Style(color=palette.error)
        else:
            style = ""
        out.append(line + "\n", style=style)
    out.rstrip()
    return out
