"""The command palette (export, copy, jump to the producer) and NO_COLOR."""

from __future__ import annotations

import json

from textual.command import CommandPalette

from diagnose.render import RENDERERS, render
from tests.tui.conftest import notifications
from tui.app import DiagnoseApp
from tui.widgets.frames_table import FramesTable


def _commands(app) -> dict[str, object]:
    return {c.title: c.callback for c in app.get_system_commands(app.screen)}


async def test_palette_offers_export_copy_and_jump(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        titles = set(_commands(app))
        assert {"Export JSON", "Export Markdown", "Copy patch", "Jump to producer"} <= titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"jump to pro", "enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.active_tab == "frames"
        assert app.query_one(FramesTable).cursor_row == 8


async def test_export_writes_every_renderers_format_next_to_the_report(fp16_report, tmp_path):
    source = tmp_path / "run.json"
    fp16_report.write(source)
    app = DiagnoseApp(fp16_report, report_path=source)
    async with app.run_test(size=(80, 24)) as pilot:
        commands = _commands(app)
        for renderer in RENDERERS.values():
            commands[f"Export {renderer.title}"]()
        await pilot.pause()
        exported = tmp_path / "run.export.json"  # never over the opened report
        assert json.loads(exported.read_text())["event"]["module"] == "model.2"
        assert "use-bf16" in (tmp_path / "run.md").read_text()
        text = (tmp_path / "run.txt").read_text()
        assert text == render(fp16_report, "text")  # what `diagnose show --format text` prints
        assert f"Wrote {exported}" in notifications(app)


async def test_copy_patch_from_the_palette_copies_the_top_fix(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        _commands(app)["Copy patch"]()
        await pilot.pause()
        assert app.clipboard == fp16_report.fixes[0].patch


async def test_no_color_turns_the_app_monochrome(fp16_report, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = DiagnoseApp(fp16_report)
    assert app.no_color
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await pilot.pause()
        svg = app.export_screenshot()
        assert "▶" in svg  # the producer stays marked without colour
