"""The walkthrough: a guided path from the verdict through the evidence to the fix."""

from __future__ import annotations

from diagnose.report import Report, StepRecord
from tui.app import DiagnoseApp
from tui.text import Palette
from tui.walkthrough import build_steps
from tui.widgets.frames_table import FramesTable
from tui.widgets.walkthrough_view import WalkthroughView


def test_a_nonfinite_run_goes_verdict_where_trend_evidence_fix_next(fp16_report):
    steps = build_steps(fp16_report, Palette())
    assert [s.title for s in steps] == [
        "Verdict",
        "Where it was born",
        "What led there",
        "Evidence",
        "The fix",
        "Next",
    ]
    assert "pred = model(x)" in steps[1].body.plain
    assert "largest |activation| (detailed steps): 40 → 5.4e4  (grew 1,343×)" in steps[2].body.plain
    assert "the GradScaler skipped 2 steps" in steps[2].body.plain
    assert steps[4].body.plain.startswith("Train in bfloat16 instead of float16  score 0.87")
    assert [s.tab for s in steps] == [None, "frames", "history", "fixes", "fixes", None]


def test_an_exception_run_shows_the_exception_and_its_matches(exception_report):
    steps = build_steps(exception_report, Palette())
    assert [s.title for s in steps][:2] == ["Verdict", "The exception"]
    assert "RuntimeError: mat1 and mat2 shapes cannot be multiplied" in steps[1].body.plain
    assert "1 dataset record matches" in steps[1].body.plain


def test_a_clean_run_says_there_is_nothing_to_fix(clean_report):
    steps = build_steps(clean_report, Palette())
    assert steps[0].body.plain.startswith("✓ CLEAN")
    assert steps[-1].body.plain == "Nothing to fix. q quits."


async def test_space_and_enter_go_forward_b_and_backspace_go_back(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        walk = app.query_one(WalkthroughView)
        await pilot.press("space")
        assert walk.index == 1
        assert "Step 2 of 6 · Where it was born" in str(app.query_one("#walk-title").render())
        await pilot.press("enter", "space", "space", "space", "space", "space")
        assert walk.index == 5  # stops at the last step
        await pilot.press("b")
        assert walk.index == 4
        await pilot.press("backspace", "backspace")
        assert walk.index == 2


async def test_o_opens_the_view_of_the_step(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("space", "o")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.active_tab == "frames"
        assert app.query_one(FramesTable).cursor_row == 8
        await pilot.press("1", "space", "o")  # the walkthrough kept its place: step 3
        assert app.active_tab == "history"
        await pilot.press("w", "space", "o")
        assert app.active_tab == "fixes"


def test_the_headline_of_an_interrupted_run_says_where_it_stopped():
    from diagnose.report import Report
    from tui.summary import headline
    from tui.text import Palette

    report = Report(
        status="interrupted",
        script={"path": "train.py"},
        interruption={
            "cause": "SIGTERM",
            "stopped_at_step": 7,
            "message": "interrupted at step 7 by SIGTERM [bold]x[/]",
        },
    )
    text = headline(report, Palette()).plain
    assert text.startswith("⏸ INTERRUPTED")
    assert "interrupted at step 7 by SIGTERM [bold]x[/]" in text  # shown as it is, no markup


def test_a_run_that_cannot_learn_goes_verdict_run_evidence_fix_next():
    from diagnose.report import Report
    from tests.tui.conftest import FIXTURES

    report = Report.load(FIXTURES / "silent_no_zero_grad.json")
    steps = build_steps(report, Palette())
    assert [s.title for s in steps] == [
        "Verdict",
        "What the run showed",
        "Evidence",
        "The fix",
        "Next",
    ]
    assert steps[0].body.plain.startswith(
        "✗ NOT LEARNING  the run stayed finite, but training is broken: gradients are never cleared"
    )
    assert steps[3].body.plain.startswith("Clear the gradients before each backward")


async def test_the_app_opens_a_silent_report_on_its_verdict():
    from diagnose.report import Report
    from tests.tui.conftest import FIXTURES

    app = DiagnoseApp(Report.load(FIXTURES / "silent_no_zero_grad.json"))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        title = str(app.query_one("#walk-title").render())
        assert "Step 1 of 5 · Verdict" in title


def test_the_trend_compares_only_values_measured_for_the_same_thing():
    """A light step measures the model's outputs and leaves the largest activation unknown:
    the trend never sets one against the other."""
    history = [
        StepRecord(step=s, loss=1.0, max_output=0.5 + 0.01 * s, detailed=s % 16 == 0)
        for s in range(40)
    ]
    for row in history:
        if row.detailed:
            row.max_activation = 3.0
    report = Report(status="clean", script={"path": "train.py"}, history=history)
    trend = build_steps(report, Palette())[1].body.plain
    assert "largest |activation| (detailed steps): 3 → 3" in trend
    assert "largest |model output|: 0.5 → 0.89" in trend
    assert "grew" not in trend
