"""Dataset records that match the run: the message, the solutions and an example fix."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Markdown, OptionList
from textual.widgets.option_list import Option

from diagnose.report import MatchRef, Report
from tui.text import literal, num, one_line, safe
from tui.widgets.match_list import MatchList


@dataclass(frozen=True, eq=False)
class Lookup:
    """The installed dataset's records by id, or why it could not be read."""

    records: Mapping[str, Any]
    error: str | None = None


class MatchesView(Horizontal):
    """The report's matches; the dataset is read in a worker, the list works meanwhile.

    Two reactives decide what the page shows: ``shown`` (the highlighted match) and
    ``lookup`` (None until the worker has read the dataset).
    """

    shown: reactive[int] = reactive(0)
    lookup: reactive[Lookup | None] = reactive(None)

    @dataclass
    class RecordsLoaded(Message):
        """Posted by the loading worker with what it read."""

        lookup: Lookup

    def __init__(self, report: Report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report

    def compose(self) -> ComposeResult:
        yield MatchList(id="match-list")
        with VerticalScroll(id="match-scroll"):
            yield Markdown(id="match-doc", parser_factory=_parser)

    def on_mount(self) -> None:
        option_list = self.query_one(MatchList)
        if not self.report.matches:
            option_list.add_option(Option(Text("(no dataset records)", style="dim"), disabled=True))
            return
        for i, ref in enumerate(self.report.matches):
            label = Text(f"{num(ref.score)} ", style="bold").append_text(literal(ref.slug))
            option_list.add_option(Option(label, id=f"match-{i}"))
        option_list.highlighted = 0
        self._load_records()

    @work(thread=True, exclusive=True, group="records")
    def _load_records(self) -> None:
        """Reading the whole dataset takes a moment; the list stays usable meanwhile."""
        try:
            from diagnose import load_records

            result = load_records()
            records = getattr(result, "records", result)
            lookup = Lookup({str(_get(r, "id")): r for r in records})
        except Exception as exc:  # the dataset is optional for showing a report
            lookup = Lookup({}, f"{type(exc).__name__}: {exc}")
        self.post_message(self.RecordsLoaded(lookup))

    @on(RecordsLoaded)
    def _records_loaded(self, message: RecordsLoaded) -> None:
        self.lookup = message.lookup

    @on(OptionList.OptionHighlighted, "#match-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_id and event.option_id.startswith("match-"):
            self.shown = int(event.option_id.removeprefix("match-"))

    def watch_shown(self) -> None:
        self._show()

    def watch_lookup(self) -> None:
        self._show()

    def _show(self) -> None:
        doc = self.query_one(Markdown)
        if not self.report.matches:
            doc.update(_no_matches(self.report))
            return
        if not 0 <= self.shown < len(self.report.matches):
            return
        ref = self.report.matches[self.shown]
        lookup = self.lookup
        record = lookup.records.get(ref.record_id) if lookup is not None else None
        doc.update(record_markdown(ref, record, lookup))


def _get(record: Any, key: str) -> Any:
    if isinstance(record, Mapping):
        return record.get(key)
    return getattr(record, key, None)


# Backslash-escaped, these characters can open no link, image, emphasis, code span or HTML.
_MARKDOWN_SIGNS = re.compile(r"([\\`*_\[\]()<>!&~|#])")
_WEB_URL = re.compile(r"https?://[^\s<>]+")


def _parser() -> MarkdownIt:
    """Textual's parser without linkify: a URL quoted in an error message is no link."""
    return MarkdownIt("gfm-like").disable("linkify", ignoreInvalid=True)


def _md(text: object) -> str:
    """Dataset prose: control characters escaped; Markdown itself is meant to render."""
    return safe(text)


def _inert(text: object) -> str:
    """Text from the report (a slug, the quoted error line): shown as it is, one line, no
    Markdown in it acting (a ``[text](url)`` from a crafted message makes no link)."""
    return _MARKDOWN_SIGNS.sub(r"\\\1", one_line(text))


_BLOCK_START = re.compile(r"^(\s*)([-+=>]|\d+[.)])")


def _quoted(text: str) -> str:
    """An error message as a block quote that wraps to the pane (a code fence would cut a long
    message at the pane's edge): every line kept, none of its signs acting as Markdown."""
    lines = [_MARKDOWN_SIGNS.sub(r"\\\1", line) for line in safe(text).splitlines()]
    lines = [_BLOCK_START.sub(r"\1\\\2", line) for line in lines if line.strip()]
    return "\n".join(f"> {line}  " for line in lines).rstrip()


def _fence(code: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return f"{ticks}{lang}\n{safe(code)}\n{ticks}"


def record_markdown(ref: MatchRef, record: Any, lookup: Lookup | None) -> str:
    """One record as Markdown; the match reference alone when the record is not at hand."""
    parts = [
        f"## {_inert(ref.slug)}",
        f"score **{num(ref.score)}** · record {_inert(ref.record_id)}",
    ]
    if ref.reason:
        parts.append(f"*Why it matched:* {_inert(ref.reason)}")
    if record is None:
        if ref.error_message:  # the report's own copy of the record's message
            parts += ["### Error message", _quoted(ref.error_message)]
        if lookup is None:
            parts.append("*Loading the dataset…*")
        elif lookup.error:
            parts.append(f"*The dataset could not be loaded ({_inert(lookup.error)}).*")
        else:
            parts.append("*This record is not in the installed dataset.*")
        return "\n\n".join(parts)
    message = _get(record, "errorMessage")
    if message:
        parts += ["### Error message", _quoted(str(message))]
    documentation = _get(record, "documentation")
    if documentation:
        parts += ["### What it means", _md(documentation)]
    solutions = _get(record, "solutions") or []
    if solutions:
        parts.append("### Solutions")
        parts.append("\n".join(f"{n}. {_md(s)}" for n, s in enumerate(solutions, 1)))
    example = _get(record, "exampleFix")
    if example:
        parts += ["### Example fix", _fence(str(example), "python")]
    url = _get(record, "githubUrl")
    if url:
        url = one_line(url)
        parts.append(f"Source: <{url}>" if _WEB_URL.fullmatch(url) else f"Source: {_inert(url)}")
    return "\n\n".join(parts)


def _no_matches(report: Report) -> str:
    if report.status == "exception":
        return "No dataset record matched this exception's message."
    if report.status == "clean":
        return "A clean run: nothing to look up in the error dataset."
    if report.status == "untrained":
        return "The run took no training step: nothing to look up in the error dataset."
    return (
        "No dataset record is linked to this run. The symptoms and fixes tabs explain "
        "the non-finite value from the run's own evidence."
    )
