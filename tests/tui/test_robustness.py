"""Reports of every shape open without a crash and say what they have; run text stays literal."""

from __future__ import annotations

import time

from textual.widgets import Markdown

from tests.render.sample_reports import silent_report
from tests.tui.conftest import notice, notifications
from tui.app import DiagnoseApp
from tui.widgets.fix_list import FixList
from tui.widgets.frames_table import FramesTable
from tui.widgets.verdict import Verdict

ALL_TABS = ("1", "2", "3", "4", "5", "6")


async def _visit_all(app, pilot) -> None:
    for key in ALL_TABS:
        await pilot.press(key)
        await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_a_clean_run(clean_report):
    app = DiagnoseApp(clean_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await _visit_all(app, pilot)
        assert app.query_one(Verdict).render().plain.startswith("✓ CLEAN  no inf/nan")
        assert app.query_one(FramesTable).row_count == 0
        assert "(no fixes proposed)" in app.query_one(FixList).get_option_at_index(0).prompt.plain


async def test_an_exception(exception_report):
    app = DiagnoseApp(exception_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await _visit_all(app, pilot)
        verdict = app.query_one(Verdict).render().plain
        assert verdict.startswith("✗ EXCEPTION RuntimeError at step 0 in forward")
        assert "mat1 and mat2 shapes cannot be multiplied" in verdict
        assert "No per-step history" in str(app.query_one("#history-view Static").render())


async def test_no_frames(no_frames_report):
    app = DiagnoseApp(no_frames_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await _visit_all(app, pilot)
        await pilot.press("2", "n")
        assert "This report recorded no frames." in notifications(app)
        await pilot.press("1", "space")
        assert "This report has no frames recorded." in str(app.query_one("#walk-body").render())


async def test_ten_thousand_frames_load_in_a_worker_and_the_cursor_finds_the_producer(big_report):
    app = DiagnoseApp(big_report)
    async with app.run_test(size=(80, 24)) as pilot:
        start = time.perf_counter()
        await pilot.press("2", "j")  # keys are answered while rows are still arriving
        table = app.query_one(FramesTable)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert table.row_count == 10_000
        assert table.cursor_row == 9_999
        await pilot.press("N")
        assert table.cursor_row == 9_999  # the only non-finite row
        assert time.perf_counter() - start < 60


async def test_a_newer_format_version_shows_the_warning(newer_report):
    assert newer_report.warnings
    app = DiagnoseApp(newer_report)
    async with app.run_test(size=(120, 24)) as pilot:
        await notice(pilot, app, "version 99")
        await _visit_all(app, pilot)
        assert "report format version 99 is newer" in app.query_one(Verdict).render().plain


async def test_markup_and_escape_sequences_from_the_run_are_shown_literally(hostile_report):
    app = DiagnoseApp(hostile_report)
    async with app.run_test(size=(200, 40)) as pilot:
        await _visit_all(app, pilot)
        shown = "[bold red]x[/]RED"  # the markup literal, the escape sequences gone whole
        verdict = app.query_one(Verdict).render()
        assert shown in verdict.plain and "\x1b" not in verdict.plain
        assert not any(
            "red" in str(span.style)
            for span in verdict.spans
            if verdict.plain[span.start : span.end] == "x"
        )
        table = app.query_one(FramesTable)
        assert table.get_row_at(8)[3].plain == shown
        await pilot.press("4")
        assert shown in app.query_one(FixList).get_option_at_index(0).prompt.plain
        await pilot.press("1", "space")
        assert shown in str(app.query_one("#walk-body").render())
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "[31m" not in svg and "x[/]RED" in svg


async def test_matches_render_dataset_records_as_markdown(exception_report):
    app = DiagnoseApp(exception_report)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await app.workers.wait_for_complete()
        await pilot.pause()
        lookup = app.query_one("#matches-view").lookup
        assert lookup is not None  # the worker has read the dataset
        markdown = app.query_one(Markdown).source
        assert markdown.startswith("## debugunderflowoverflow-inf-nan-detected-aborting")
        if lookup.error is None and "1e92004800b7520d" in lookup.records:
            assert "### Solutions" in markdown and "### Example fix" in markdown
        else:
            assert "dataset" in markdown


async def test_a_run_that_did_not_learn_shows_its_curves_above_the_plots():
    app = DiagnoseApp(silent_report([2.31, 2.2, 2.05, 2.3, 2.28], layers=("net.fc1", "net.fc2")))
    async with app.run_test(size=(100, 30)) as pilot:
        await _visit_all(app, pilot)
        assert app.query_one(Verdict).render().plain.startswith("✗ NOT LEARNING")
        shown = app.query_one("#learning-evidence").render().plain
        assert "chance level ln(10)" in shown and "net.fc1 0.5, net.fc2 1" in shown
