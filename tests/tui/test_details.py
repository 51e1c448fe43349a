"""The Details modal shows every field of the row: its place, its tensors and, for the
producer, the whole event."""

from __future__ import annotations

from rich.console import Console

from diagnose.report import CallFrame, InputValues, Report
from tests.tui.conftest import HOSTILE, load_fp16, notice, show_tab, until
from tui.app import DiagnoseApp
from tui.screens.frame_details import FrameDetailsScreen
from tui.widgets.frames_table import FramesTable


def with_chain() -> Report:
    report = load_fp16()
    report.event.op_input_values = [
        InputValues(name="input", role="activation", dtype="float16"),
        InputValues(name="mat2", role="weight", dtype="float16"),
    ]
    report.event.call_chain = [
        CallFrame(file="examples/fp16_overflow.py", line=60, function="main"),
        CallFrame(file="examples/fp16_overflow.py", line=41, function=HOSTILE),
    ]
    return report


def shown(screen: FrameDetailsScreen) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(screen.query_one("#details-title").content)
    if screen.query("#details-event"):
        console.print(screen.query_one("#details-event").content)
    return console.export_text()


async def _open_row(pilot, keys: tuple[str, ...] = ()) -> FrameDetailsScreen:
    await show_tab(pilot, "2")
    table = pilot.app.query_one(FramesTable)
    await until(pilot, lambda: table.loaded, "the frames to load")
    await pilot.press(*keys, "enter")
    await until(pilot, lambda: isinstance(pilot.app.screen, FrameDetailsScreen), "the details")
    return pilot.app.screen


async def test_the_producer_s_details_hold_the_whole_event():
    app = DiagnoseApp(with_chain())
    async with app.run_test(size=(120, 40)) as pilot:
        text = shown(await _open_row(pilot))
    assert "Row 9 of 11  model.2 (Linear)  step 37  forward  call 2408 of the run" in text
    assert "model.2 (Linear) produced inf in forward at step 37" in text
    assert "at examples/fp16_overflow.py:41 in train" in text and "pred = model(x)" in text
    input_row = next(line for line in text.splitlines() if line.lstrip().startswith("input "))
    assert input_row.split()[:4] == ["input", "activation", "float16", "64×256"]
    assert any(line.split()[:2] == ["mat2", "weight"] for line in text.splitlines())
    assert "Call chain (outermost first)" in text
    assert "examples/fp16_overflow.py:60 in main" in text
    assert "examples/fp16_overflow.py:41 in [bold red]x[/]RED" in text  # literal, no markup
    assert "\x1b" not in text
    assert "• 12 of 16384 output elements are inf" in text


async def test_another_row_s_details_name_its_row_without_the_event():
    app = DiagnoseApp(with_chain())
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open_row(pilot, ("k", "k"))
        text = shown(screen)
        assert text.startswith("Row 7 of 11  model.0 (Linear)  step 37")
        assert "produced inf" not in text
        await pilot.press("j", "escape")
        assert not isinstance(app.screen, FrameDetailsScreen)


async def test_enter_on_a_fix_shows_the_whole_fix_the_width_of_the_screen(fp16_report):
    from tui.screens.fix_details import FixDetailsScreen

    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("down", "enter")
        await until(pilot, lambda: isinstance(app.screen, FixDetailsScreen), "the fix's details")
        screen = app.screen
        assert screen.fix.id == "enable-grad-clipping"
        console = Console(width=76, record=True, color_system=None)
        console.print(screen.query_one("#fix-details").content)
        text = console.export_text()
        for part in ("Clip the gradient norm", "Why", "Evidence", "Patch against", "c copies"):
            assert part in text
        await pilot.press("j", "c")
        await notice(pilot, app, "Copied the patch of enable-grad-clipping")
        await pilot.press("q")
        assert not isinstance(app.screen, FixDetailsScreen)
