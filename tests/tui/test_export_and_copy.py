"""Exports and the clipboard treat the user's files and shell as the terminal is treated:
an export never writes through a link, never replaces a file without asking, and a copied
patch holds nothing a shell or terminal would act on."""

from __future__ import annotations

import os

from tests.tui.conftest import notifications
from tests.untrusted import assert_no_controls
from tui.app import DiagnoseApp
from tui.screens.confirm import ConfirmScreen

BIDI = ("\u202e", "\u2066", "\u2069")


def _export_markdown(app) -> None:
    commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
    commands["Export Markdown"]()


async def test_an_export_over_an_existing_file_asks_first_and_no_keeps_it(fp16_report, tmp_path):
    source = tmp_path / "README.json"  # the export of README.json is README.md
    fp16_report.write(source)
    readme = tmp_path / "README.md"
    readme.write_text("# my project\n")
    app = DiagnoseApp(fp16_report, report_path=source)
    async with app.run_test(size=(80, 24)) as pilot:
        _export_markdown(app)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert readme.read_text() == "# my project\n"
        assert any("kept as it was" in n for n in notifications(app))
        _export_markdown(app)
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert "use-bf16" in readme.read_text()
        assert f"Wrote {readme}" in notifications(app)


async def test_an_export_never_writes_through_a_link(fp16_report, tmp_path):
    source = tmp_path / "run.json"
    fp16_report.write(source)
    victim = tmp_path / "elsewhere.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, tmp_path / "run.md")
    os.symlink(tmp_path / "missing-target", tmp_path / "run.txt")  # dangling: nothing created
    app = DiagnoseApp(fp16_report, report_path=source)
    async with app.run_test(size=(80, 24)) as pilot:
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        commands["Export Markdown"]()
        commands["Export text"]()
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        said = notifications(app)
        assert sum("is a symbolic link (not followed)" in n for n in said) == 2, said
    assert victim.read_text() == "keep me\n"
    assert os.path.islink(tmp_path / "run.md") and not (tmp_path / "missing-target").exists()


async def test_a_crafted_patch_reaches_the_clipboard_and_the_export_harmless(fp16_report, tmp_path):
    attack = "+lr = 1e-3\x1b[201~\recho pwned\n\u202eevil\u2066\x1b]52;c;eA==\x07\x9b2J"
    fixes = [f.model_copy(update={"patch": attack, "title": attack}) for f in fp16_report.fixes]
    event = fp16_report.event.model_copy(update={"message": attack})
    report = fp16_report.model_copy(update={"fixes": fixes, "event": event})
    source = tmp_path / "run.json"
    report.write(source)
    app = DiagnoseApp(report, report_path=source)
    async with app.run_test(size=(80, 24)) as pilot:
        commands = {c.title: c.callback for c in app.get_system_commands(app.screen)}
        commands["Copy patch"]()
        for title in ("Export Markdown", "Export text", "Export JSON"):
            commands[title]()
        await pilot.pause()
        clip = app.clipboard
        assert "\x1b" not in clip and "\r" not in clip and "\x9b" not in clip
        assert not any(ch in clip for ch in BIDI)
        assert "echo pwned" in clip  # the words stay; what would act on them does not
        assert any("shown as" in n for n in notifications(app))
    for name in ("run.md", "run.txt", "run.export.json"):
        text = (tmp_path / name).read_text()
        assert_no_controls(text, name)
        assert not any(ch in text for ch in BIDI), name
