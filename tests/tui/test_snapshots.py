"""SVG snapshots at fixed sizes: the layout at 80x24 and at 200x60.

Update after a deliberate change with ``pytest tests/tui/test_snapshots.py --snapshot-update``
and look at the SVGs under ``tests/tui/__snapshots__/`` before committing them.
"""

from __future__ import annotations

from diagnose.report import Report
from tests.tui.conftest import FIXTURES, load_fp16, show_tab
from tui.app import DiagnoseApp


async def _settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_walkthrough_80x24(snap_compare):
    assert snap_compare(DiagnoseApp(load_fp16()), terminal_size=(80, 24), run_before=_settle)


def test_frames_on_the_producer_80x24(snap_compare):
    async def open_frames(pilot) -> None:
        await show_tab(pilot, "2")
        await _settle(pilot)

    assert snap_compare(DiagnoseApp(load_fp16()), terminal_size=(80, 24), run_before=open_frames)


def test_fixes_with_the_coloured_patch_80x24(snap_compare):
    async def open_fixes(pilot) -> None:
        await show_tab(pilot, "4")
        await _settle(pilot)

    assert snap_compare(DiagnoseApp(load_fp16()), terminal_size=(80, 24), run_before=open_fixes)


def test_history_200x60(snap_compare):
    async def open_history(pilot) -> None:
        await show_tab(pilot, "3")
        await _settle(pilot)

    assert snap_compare(DiagnoseApp(load_fp16()), terminal_size=(200, 60), run_before=open_history)


def test_config_of_a_silent_run_80x24(snap_compare):
    async def open_config(pilot) -> None:
        await show_tab(pilot, "6")
        await _settle(pilot)

    report = Report.load(FIXTURES / "silent_no_zero_grad.json")
    assert snap_compare(DiagnoseApp(report), terminal_size=(80, 24), run_before=open_config)


def test_history_of_a_silent_run_100x30(snap_compare):
    async def open_history(pilot) -> None:
        await show_tab(pilot, "3")
        await _settle(pilot)

    report = Report.load(FIXTURES / "silent_no_zero_grad.json")
    assert snap_compare(DiagnoseApp(report), terminal_size=(100, 30), run_before=open_history)
