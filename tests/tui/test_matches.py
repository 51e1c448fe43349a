"""The Matches tab shows a record's error message whole, wrapped to the pane."""

from __future__ import annotations

from tests.tui.conftest import load_fp16, show_tab
from tui.app import DiagnoseApp
from tui.widgets.matches_view import record_markdown


def pane_words(app: DiagnoseApp, selector: str) -> str:
    """The words on screen inside the widget ``selector``, rows joined, quote bars removed."""
    region = app.query_one(selector).region
    strips = app.screen._compositor.render_strips()[region.y : region.bottom]
    text = " ".join(strip.crop(region.x, region.right).text for strip in strips)
    return " ".join(text.replace("▌", " ").split())


async def test_a_long_error_message_wraps_and_is_shown_to_its_last_word():
    app = DiagnoseApp(load_fp16())
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "5")
        await app.workers.wait_for_complete()
        await pilot.pause()
        words = pane_words(app, "#match-scroll")
    assert "DebugUnderflowOverflow: inf/nan detected, aborting as there is no point" in words
    assert "to see the activation values prior to this event." in words


def test_the_message_is_quoted_with_no_markdown_acting():
    ref = (
        load_fp16()
        .matches[0]
        .model_copy(
            update={"error_message": "- not a list\n# not a heading [x](https://e.example) *no*"}
        )
    )
    text = record_markdown(ref, None, None)
    assert "> \\- not a list  \n> \\# not a heading \\[x\\]\\(https://e.example\\) \\*no\\*" in text
