"""Every reference into the Frames tab names the row the table shows; n / N work for every
kind of event."""

from __future__ import annotations

from diagnose.report import Report
from tests.tui.conftest import load_fp16, notice, show_tab, until
from tui.app import DiagnoseApp
from tui.widgets.frames_table import FramesTable
from tui.widgets.walkthrough_view import WalkthroughView


def finite_frames_event(phase: str) -> Report:
    """The fp16 report's frames made finite and unmarked, its event born in ``phase``."""
    report = load_fp16()
    frames = []
    for frame in report.frames:
        stats = {
            role: [s.model_copy(update={"abs_max": 1.0, "inf": 0, "nan": 0}) for s in items]
            for role, items in (
                ("inputs", frame.inputs),
                ("outputs", frame.outputs),
                ("weights", frame.weights),
            )
        }
        frames.append(frame.model_copy(update={**stats, "producer": False}))
    event = report.event.model_copy(update={"phase": phase, "module": "model.0"})
    return report.model_copy(update={"frames": frames, "event": event})


async def _loaded(pilot) -> FramesTable:
    table = pilot.app.query_one(FramesTable)
    await until(pilot, lambda: table.loaded, "the frames to load")
    return table


async def test_the_walkthrough_names_the_row_the_frames_table_numbers(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("space")
        body = str(app.query_one("#walk-body").render())
        assert "In the Frames tab (2) it is row 9 of 11 (step 37, model.2), marked ▶." in body
        assert f"frame {fp16_report.frames[8].index}" not in body
        await show_tab(pilot, "2")
        table = await _loaded(pilot)
        row = table.get_row_at(table.cursor_row)
        assert [row[0].plain, row[1].plain, row[2].plain, row[3].plain] == [
            "▶",
            "9",
            "37",
            "model.2",
        ]
        assert table.row_count == 11


async def test_n_on_a_backward_event_says_where_the_value_was_instead():
    app = DiagnoseApp(finite_frames_event("backward"))
    async with app.run_test(size=(120, 40)) as pilot:
        await show_tab(pilot, "2")
        table = await _loaded(pilot)
        before = table.cursor_row
        await pilot.press("n")
        said = await notice(pilot, app, "backward pass of model.0")
        assert "gradients are not rows here" in said and "11 rows" in said
        assert "No non-finite frames" not in said
        assert table.cursor_row == before


async def test_n_on_an_optimizer_event_points_at_the_optimizer():
    app = DiagnoseApp(finite_frames_event("optimizer"))
    async with app.run_test(size=(120, 40)) as pilot:
        await show_tab(pilot, "2")
        await _loaded(pilot)
        await pilot.press("N")
        said = await notice(pilot, app, "optimizer step")
        assert "the Config tab its settings" in said


async def test_a_finite_producer_is_still_a_stop_for_n(fp16_report):
    report = finite_frames_event("backward")
    report.frames[4].producer = True
    app = DiagnoseApp(report)
    async with app.run_test(size=(120, 40)) as pilot:
        await show_tab(pilot, "2")
        table = await _loaded(pilot)
        await pilot.press("k", "k", "n")
        assert table.cursor_row == 4
        await pilot.press("1", "space")
        walk = app.query_one(WalkthroughView)
        assert "row 5 of 11" in str(walk.query_one("#walk-body").render())
