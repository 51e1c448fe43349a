"""Counts read as words ("1 fix", "2 fixes") and each hint names only keys that apply."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from diagnose.report import Report
from tests.tui.conftest import load_fp16, notice, show_tab, until
from tui.app import DiagnoseApp
from tui.text import Palette, plural
from tui.walkthrough import build_steps
from tui.widgets.fixes_view import FixesView


def only_unpatched_fix() -> Report:
    report = load_fp16()
    return report.model_copy(update={"fixes": [f for f in report.fixes if not f.patch]})


def footer_keys(app: DiagnoseApp) -> list[str]:
    return [key.description for key in app.query(FooterKey)]


def test_counts_are_in_the_form_the_count_needs():
    assert plural(1, "fix", "fixes") == "1 fix"
    assert plural(2, "fix", "fixes") == "2 fixes"
    assert plural(0, "step") == "0 steps"
    assert plural(12_000, "step") == "12,000 steps"


def test_the_last_step_counts_fixes_and_names_the_patch_keys_only_for_a_patch():
    patched = build_steps(load_fp16(), Palette())[-1].body.plain
    assert "4 fixes, best first" in patched
    assert "c copies the patch, a applies it" in patched
    unpatched = build_steps(only_unpatched_fix(), Palette())[-1].body.plain
    assert "1 fix, best first" in unpatched
    assert "(es)" not in unpatched and "a applies" not in unpatched
    assert "no single line to change" in unpatched
    assert "c copies its example" in unpatched


def test_one_matching_record_is_said_in_the_singular(exception_report):
    body = build_steps(exception_report, Palette())[1].body.plain
    assert "1 dataset record matches; the Matches tab has it." in body


async def test_the_footer_offers_apply_only_for_a_fix_with_a_patch(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(120, 30)) as pilot:
        await show_tab(pilot, "4")
        await until(pilot, lambda: "Apply" in footer_keys(app), "the patch keys")
        assert "Copy patch" in footer_keys(app) and "Copy example" not in footer_keys(app)
        view = app.query_one(FixesView)
        await pilot.press("down", "down", "down")
        await until(pilot, lambda: view.selected == 3, "the unpatched fix")
        await until(pilot, lambda: "Copy example" in footer_keys(app), "the example key")
        assert "Apply" not in footer_keys(app) and "Copy patch" not in footer_keys(app)
        detail = app.query_one("#fix-detail").render().plain
        assert "c copies the example; there is no patch to apply" in detail
        assert "a applies" not in detail
        await pilot.press("a")
        said = await notice(pilot, app, "Nothing to apply")
        assert "no single line to change" in said
        await pilot.press("c")
        await notice(pilot, app, "Copied the example (no concrete patch) of upcast-to-fp32")


def test_a_fix_given_as_arguments_says_to_run_with_them():
    report = load_fp16()
    fix = report.fixes[2].model_copy(update={"patch": None, "patch_argv": ["--lr=0.001"]})
    report = report.model_copy(update={"fixes": [fix]})
    body = build_steps(report, Palette())[-1].body.plain
    assert "nothing to patch; run the script with --lr=0.001 instead" in body
    assert "c copies the patch" not in body
