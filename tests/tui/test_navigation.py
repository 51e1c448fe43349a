"""Keys that move around the app: tabs, the producer, frames, details, the key list."""

from __future__ import annotations

from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey

from tests.tui.conftest import notifications
from tui.app import TABS, DiagnoseApp
from tui.screens.frame_details import FrameDetailsScreen
from tui.screens.keys import KeysScreen
from tui.widgets.frames_table import FramesTable
from tui.widgets.verdict import Verdict
from tui.widgets.walkthrough_view import WalkthroughView


async def _frames_ready(app, pilot) -> FramesTable:
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.query_one(FramesTable)


async def test_opens_on_the_walkthrough_with_the_verdict_on_top(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.active_tab == "walkthrough"
        assert isinstance(app.focused, WalkthroughView)
        verdict = app.query_one(Verdict).render().plain
        assert "NON-FINITE inf born at step 37 in forward" in verdict
        assert "model.2 (Linear) · op addmm · examples/fp16_overflow.py:41" in verdict
        assert "float16 activation overflow" in verdict
        assert "Train in bfloat16 instead of float16" in verdict


async def test_number_keys_and_brackets_switch_tabs_and_focus_their_content(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        for n, tab in enumerate(TABS, 1):
            await pilot.press(str(n))
            assert app.active_tab == tab
        await pilot.press("right_square_bracket")
        assert app.active_tab == "walkthrough"
        await pilot.press("left_square_bracket")
        assert app.active_tab == "config"
        await pilot.press("2")
        assert isinstance(app.focused, FramesTable)


async def test_frames_cursor_starts_on_the_producer(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        table = await _frames_ready(app, pilot)
        producer = next(i for i, f in enumerate(fp16_report.frames) if f.producer)
        assert table.cursor_row == producer == 8
        assert table.get_row_at(producer)[0].plain == "▶"


async def test_n_and_shift_n_cycle_through_nonfinite_rows(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        table = await _frames_ready(app, pilot)
        assert table.nonfinite_rows == [8, 9, 10]
        await pilot.press("n")
        assert table.cursor_row == 9
        await pilot.press("n", "n")
        assert table.cursor_row == 8  # wraps around
        await pilot.press("N")
        assert table.cursor_row == 10


async def test_j_k_and_arrows_move_the_frame_cursor(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        table = await _frames_ready(app, pilot)
        await pilot.press("k", "k")
        assert table.cursor_row == 6
        await pilot.press("down")
        assert table.cursor_row == 7
        await pilot.press("j", "up", "j")
        assert table.cursor_row == 8


async def test_p_jumps_to_the_producer_from_any_tab(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        table = await _frames_ready(app, pilot)
        await pilot.press("k", "k", "k", "6")
        assert app.active_tab == "config"
        await pilot.press("p")
        assert app.active_tab == "frames"
        assert table.cursor_row == 8


async def test_enter_opens_the_frame_details_and_escape_closes_them(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await _frames_ready(app, pilot)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FrameDetailsScreen)
        assert screen.frame.producer and screen.frame.module == "model.2"
        details = screen.query_one(DataTable)
        roles = [details.get_row_at(i)[0].plain for i in range(details.row_count)]
        assert roles == ["input", "output", "weight", "weight"]
        output = details.get_row_at(1)
        assert output[5].plain == "inf" and output[7].plain == "12"
        await pilot.press("escape")
        assert not isinstance(app.screen, FrameDetailsScreen)


async def test_question_mark_lists_every_key(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        described = {row[2] for row in rows}
        for does in (
            "Next inf/nan",
            "Copy patch",
            "Apply",
            "Verify",
            "Next",
            "Producer",
            "Details",
            "Command palette",
        ):
            assert does in described
        await pilot.press("escape")
        assert not isinstance(app.screen, KeysScreen)


async def test_footer_shows_the_keys_of_the_focused_tab(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        shown = {key.description for key in app.query_one(Footer).query(FooterKey)}
        assert {"Copy patch", "Apply", "Verify", "Quit", "Keys", "Producer"} <= shown
        await pilot.press("2")
        await pilot.pause()
        shown = {key.description for key in app.query_one(Footer).query(FooterKey)}
        assert {"Next inf/nan", "Prev inf/nan", "Details"} <= shown


async def test_q_quits(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_p_without_a_producer_says_so(no_frames_report):
    app = DiagnoseApp(no_frames_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        assert app.active_tab == "walkthrough"
        assert "This report names no producer frame." in notifications(app)
