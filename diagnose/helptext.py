"""Help text for people: docstrings without their markup, laid out in paragraphs.

The subcommands' descriptions are their modules' docstrings, written for readers of the code
(``code``, :mod:`diagnose.x`, `spans`). ``plain`` turns that into what a terminal should show,
and ``HelpFormatter`` keeps the paragraphs and the indented example lines that argparse's
default formatter would run together into one block.
"""

from __future__ import annotations

import argparse
import re
import textwrap

# :role:`target` and :role:`~pkg.mod.name` (a tilde shows the last part only)
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`]+)`")
_CODE = re.compile(r"``([^`]+?)``|`([^`\n]+)`")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![\w*])")


def plain(text: str | None) -> str:
    """``text`` with reST roles, code spans and emphasis markers taken out, words kept."""
    if not text:
        return ""
    text = _ROLE.sub(_role_text, text)
    text = _CODE.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    text = _EMPHASIS.sub(r"\1", text)
    first, _, rest = text.partition("\n")  # a docstring's first line has no indent
    return (first.strip() + "\n" + textwrap.dedent(rest)).strip()


def _role_text(match: re.Match[str]) -> str:
    short, target = match.groups()
    return target.rsplit(".", 1)[-1] if short else target


class HelpFormatter(argparse.HelpFormatter):
    """Paragraphs stay paragraphs, indented lines (examples) stay as written, and an argument
    that takes the rest of the command line shows as optional (``[ARGS ...]``)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out: list[str] = []
        for block in re.split(r"\n\s*\n", text):
            lines = block.splitlines()
            if any(line.startswith((" ", "\t")) for line in lines):
                out.append("\n".join(indent + line.rstrip() for line in lines))
            else:
                out.append(
                    textwrap.fill(
                        " ".join(block.split()),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                    )
                )
        return "\n\n".join(out)

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        if action.nargs == argparse.REMAINDER:
            (metavar,) = self._metavar_formatter(action, default_metavar)(1)
            return f"[{metavar} ...]"
        return super()._format_args(action, default_metavar)
