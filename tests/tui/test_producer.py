"""The producer the UI marks is the one the text report marks: the frame the tracer flagged."""

from __future__ import annotations

import pytest

from diagnose.render import render
from diagnose.report import Report
from tests.tui.conftest import load_fp16, notifications
from tui.app import DiagnoseApp
from tui.text import Palette
from tui.walkthrough import build_steps
from tui.widgets.frames_table import FramesTable


def _unflagged() -> Report:
    """The fp16 report with its non-finite frames kept but no frame flagged as producer."""
    report = load_fp16()
    frames = [f.model_copy(update={"producer": False}) for f in report.frames]
    return report.model_copy(update={"frames": frames})


def _flagged_second() -> Report:
    """The tracer flagged the second non-finite frame, not the first one."""
    report = load_fp16()
    frames = [f.model_copy(update={"producer": i == 9}) for i, f in enumerate(report.frames)]
    return report.model_copy(update={"frames": frames})


def _text_marked_modules(report: Report) -> list[str]:
    rows = [line.split() for line in render(report, "text").splitlines()]
    return [row[3] for row in rows if row and row[0] == ">>"]  # >> step phase module


async def _tui_marked_modules(report: Report) -> list[str]:
    app = DiagnoseApp(report)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.query_one(FramesTable)
        marked = [i for i in range(table.row_count) if table.get_row_at(i)[0].plain == "▶"]
        return [table.get_row_at(i)[3].plain for i in marked]


@pytest.mark.parametrize("make", [load_fp16, _flagged_second, _unflagged])
async def test_the_ui_marks_the_same_producer_as_the_text_report(make):
    report = make()
    assert await _tui_marked_modules(report) == _text_marked_modules(report)


async def test_a_report_that_flags_no_producer_shows_none_even_with_non_finite_frames():
    report = _unflagged()
    assert any(not f.finite for f in report.frames)
    app = DiagnoseApp(report)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("p")
        assert app.active_tab == "walkthrough"
        assert "This report names no producer frame." in notifications(app)
    born = build_steps(report, Palette())[1].body.plain
    assert "is marked ▶" not in born
