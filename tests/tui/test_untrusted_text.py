"""The UI shows hostile report text as text: nothing written to the terminal acts on it.

"Written" is what the app would send to the terminal for the whole screen, toasts included
(the compositor's full update, as ``App._display`` writes it); Textual's own colour and cursor
sequences are the only escape sequences allowed in it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from hypothesis import given
from textual.widgets._markdown import MarkdownBlock

from diagnose.report import Report
from tests.tui.conftest import load_fp16, notifications, until
from tests.untrusted import (
    ATTACKS,
    MARKUP,
    assert_no_controls,
    every_field,
    examples,
    hostile_reports,
)
from tui.app import DiagnoseApp
from tui.widgets.fix_list import FixList
from tui.widgets.verdict import Verdict

OSC52_CLEAR = "\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J"
LINKS = " [x](https://evil.example/a) https://evil.example/b"
OURS = re.compile(r"\x1b\[[0-9;]*m|\x1b\[\d+;\d+H")  # Textual's SGR colours and cursor moves


def written(app: DiagnoseApp) -> str:
    """The screen as the app would write it to the terminal, less Textual's own sequences."""
    update = app.screen._compositor.render_update(full=True)
    return OURS.sub("", update.render_segments(app.console))


def actions_and_links(app: DiagnoseApp) -> list[str]:
    """Every click action and hyperlink in what is on screen now."""
    found = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            style = segment.style
            if style is None:
                continue
            if style.link:
                found.append(f"link {style.link}")
            if "@click" in style.meta:
                found.append(f"@click {style.meta['@click']}")
    return found


async def visit_every_tab(app: DiagnoseApp, pilot, *, records: bool = True) -> list[str]:
    """Show each tab (the matches one with its ``records`` loaded) and collect what was written."""
    screens = [written(app)]
    for key in ("2", "3", "4", "5", "6", "1", "space", "space"):
        await pilot.press(key)
        if key == "5" and records:
            await app.workers.wait_for_complete()
        await pilot.pause()
        screens.append(written(app))
        assert actions_and_links(app) == [], key
    return screens


async def test_a_saved_report_whose_warning_writes_the_clipboard_and_clears_the_screen(
    tmp_path: Path,
):
    report = load_fp16()
    report.warnings = [f"tracer: a call was not recorded: {OSC52_CLEAR}boom"]
    report.write(tmp_path / "r.json")
    app = DiagnoseApp(Report.load(tmp_path / "r.json"), report_path=tmp_path / "r.json")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: notifications(app), "the warning's toast")
        assert notifications(app) == ["tracer: a call was not recorded: boom"]
        screen = written(app)
        assert_no_controls(screen, "screen with the toast")
        assert "boom" in screen and "52;c" not in screen


async def test_markup_and_escapes_in_every_field_are_shown_literally():
    report = Report.model_validate(every_field(MARKUP + "".join(ATTACKS) + LINKS, "nonfinite"))
    app = DiagnoseApp(report)
    async with app.run_test(size=(200, 50)) as pilot:
        shown = lambda: len(notifications(app)) >= len(report.warnings)  # noqa: E731
        await until(pilot, shown, "the warnings' toasts")
        assert all(MARKUP in m for m in notifications(app))
        assert MARKUP in app.query_one(Verdict).render().plain
        for screen in await visit_every_tab(app, pilot):
            assert_no_controls(screen)
        await pilot.press("4")
        assert MARKUP in app.query_one(FixList).get_option_at_index(0).prompt.plain
        assert MARKUP in str(app.query_one("#fix-detail").render())
        await pilot.press("5")
        await pilot.pause()
        shown = "\n".join(block._content.plain for block in app.query(MarkdownBlock))
        assert MARKUP in shown and "[x](https://evil.example/a)" in shown
        assert actions_and_links(app) == []
        await pilot.press("4", "a")  # the confirmation quotes the fix title and the script path
        await pilot.pause()
        assert_no_controls(written(app), "confirmation")
        assert MARKUP in str(app.screen.query_one("#confirm-question").render())
        assert actions_and_links(app) == []


async def _show_everything(data: dict) -> None:
    app = DiagnoseApp(Report.model_validate(data))
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        for message in notifications(app):
            assert_no_controls(message, "toast")
        for screen in await visit_every_tab(app, pilot, records=False):
            assert_no_controls(screen)


@examples(3)
@given(hostile_reports())
def test_no_control_reaches_the_terminal_from_any_field(data):
    asyncio.run(_show_everything(data))
