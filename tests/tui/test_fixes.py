"""The Fixes tab: ranked list, coloured patch, copy (c), apply (a), verify (v)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from tests.tui.conftest import notice, notifications, show_tab, until
from tui.app import DiagnoseApp
from tui.screens.confirm import ConfirmScreen
from tui.text import Palette, diff_text
from tui.widgets.fix_list import FixList
from tui.widgets.fixes_view import FixesView


async def test_fixes_are_listed_best_first_with_the_selected_detail(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await until(pilot, lambda: isinstance(app.focused, FixList), "the fix list's focus")
        option_list = app.query_one(FixList)
        labels = [option_list.get_option_at_index(i).prompt.plain for i in range(4)]
        assert labels[0].startswith("1. 0.87") and "bfloat16" in labels[0]
        detail = app.query_one("#fix-detail").render().plain
        for part in (
            "score 0.87",
            "Why",
            "Rules  fp16-overflow-in-forward",
            "Evidence",
            '+        with torch.autocast("cpu", dtype=torch.bfloat16):',
        ):
            assert part in detail
        await pilot.press("j")
        assert app.query_one(FixesView).selected == 1
        assert "Clip the gradient norm" in app.query_one("#fix-detail").render().plain
        await pilot.press("k", "down", "down", "down")
        detail = app.query_one("#fix-detail").render().plain
        assert "no single line to change" in detail  # the patch note of a fix without patch


def test_diff_lines_are_coloured_by_kind():
    palette = Palette(error="#ff0000", success="#00ff00", accent="#0000ff")
    text = diff_text("--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same", palette)
    styles = {}
    for span in text.spans:
        styles[text.plain[span.start : span.end].strip()] = str(span.style)
    assert "#00ff00" in styles["+new"]
    assert "#ff0000" in styles["-old"]
    assert "#0000ff" in styles["@@ -1 +1 @@"]
    assert "same" not in styles


async def test_c_copies_the_selected_patch_to_the_clipboard(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("j", "c")
        assert app.clipboard == fp16_report.fixes[1].patch
        assert "Copied the patch of enable-grad-clipping." in notifications(app)
        await pilot.press("j", "j", "c")  # no concrete patch: the example is copied
        assert app.clipboard == fp16_report.fixes[3].example_patch


def _file_patcher(script: Path):
    """A real patcher for the test: backs the script up, then rewrites the changed line."""

    def apply(report, fix_id):
        backup = script.with_suffix(".py.bak")
        shutil.copy2(script, backup)
        script.write_text(script.read_text().replace("float16", "bfloat16"))
        return f"backup in {backup.name}"

    return apply


async def test_a_asks_first_then_applies_with_a_backup(fp16_report, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("dtype = torch.float16\n")
    app = DiagnoseApp(fp16_report, patcher=_file_patcher(script))
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("n")
        await notice(pilot, app, "Not applied.")
        assert script.read_text() == "dtype = torch.float16\n"
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await notice(pilot, app, "Applied use-bf16")
        assert script.read_text() == "dtype = torch.bfloat16\n"
        assert (tmp_path / "train.py.bak").read_text() == "dtype = torch.float16\n"
        assert "Applied use-bf16 (backup in train.py.bak)." in notifications(app)


async def test_the_confirmation_buttons_answer_like_the_keys(fp16_report, tmp_path):
    script = tmp_path / "train.py"
    script.write_text("dtype = torch.float16\n")
    app = DiagnoseApp(fp16_report, patcher=_file_patcher(script))
    async with app.run_test(size=(100, 30)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.click("#no")
        await notice(pilot, app, "Not applied.")
        assert not isinstance(app.screen, ConfirmScreen)
        assert script.read_text() == "dtype = torch.float16\n"
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.click("#yes")
        await notice(pilot, app, "Applied use-bf16")
        assert script.read_text() == "dtype = torch.bfloat16\n"


async def test_a_on_a_fix_without_patch_explains_why(fp16_report):
    app = DiagnoseApp(fp16_report)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("j", "j", "j", "a")
        await notice(pilot, app, "no single line to change")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_a_reports_a_patcher_that_fails(fp16_report):
    def broken(report, fix_id):
        raise FileNotFoundError("examples/fp16_overflow.py: no such file")

    app = DiagnoseApp(fp16_report, patcher=broken)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: notifications(app), "the outcome's notice")
        assert any(m.startswith("Could not apply use-bf16:") for m in notifications(app))


async def test_v_verifies_in_a_worker_with_progress_then_marks_the_fix(fp16_report):
    started, release = threading.Event(), threading.Event()
    calls = []

    def verifier(report, fix_id, progress):
        calls.append(fix_id)
        started.set()
        release.wait(120)
        return _rerun(report, fix_id, verified=True)

    app = DiagnoseApp(fp16_report, verifier=verifier)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        await until(pilot, started.is_set, "the verifier to start")
        view = app.query_one(FixesView)
        await until(pilot, lambda: app.query_one("#verify-progress").display, "the progress line")
        assert view.verifying == {"use-bf16"}
        assert app.query_one("#verify-progress").display
        first = app.query_one(FixList).get_option_at_index(0).prompt.plain
        assert "…" in first
        await pilot.press("j")  # the screen answers while the run goes on
        assert view.selected == 1
        release.set()
        await notice(pilot, app, "use-bf16: verified")
        assert calls == ["use-bf16"]
        assert view.verifying == frozenset()
        assert not app.query_one("#verify-progress").display
        assert fp16_report.fixes[0].verified is True
        assert "✓" in app.query_one(FixList).get_option_at_index(0).prompt.plain
        assert "use-bf16: verified, the patched run is clean." in notifications(app)


async def test_the_progress_line_shows_the_latest_update_as_plain_text(fp16_report):
    from diagnose.verify_progress import Progress

    told, release = threading.Event(), threading.Event()

    def verifier(report, fix_id, progress):
        progress(Progress(fix_id, "lr [b]0.01[/b]", 2, 4))
        told.set()
        release.wait(120)
        return _rerun(report, fix_id, verified=True)

    app = DiagnoseApp(fp16_report, verifier=verifier)
    async with app.run_test(size=(100, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        await until(pilot, told.is_set, "the first progress")
        running = "verify use-bf16: lr [b]0.01[/b] (2/4): running"
        label = lambda: app.query_one("#verify-label").render().plain  # noqa: E731
        await until(pilot, lambda: running in label(), "the progress label")
        release.set()
        await notice(pilot, app, "use-bf16: verified")
        assert app.query_one(FixesView).progress_line == ""


async def test_the_bar_shows_the_ladder_while_running_and_the_steps_reached_at_the_end(
    fp16_report,
):
    from textual.widgets import ProgressBar

    from diagnose.verify_progress import Progress

    steps = [threading.Event() for _ in range(3)]
    go = [threading.Event() for _ in range(3)]

    def verifier(report, fix_id, progress):
        updates = [
            Progress(fix_id, "lr 0.01", 2, 4, of_steps=40),
            Progress(fix_id, "lr 0.01", 2, 4, of_steps=40, elapsed=3.0, tick=True),
            Progress(fix_id, "lr 0.01", 2, 4, steps=17, verdict="still nan", of_steps=40),
        ]
        for update, told, wait in zip(updates, steps, go, strict=True):
            progress(update)
            told.set()
            wait.wait(120)
        return _rerun(report, fix_id, verified=False)

    app = DiagnoseApp(fp16_report, verifier=verifier)
    async with app.run_test(size=(120, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        bar = app.query_one("#verify-progress").query_one(ProgressBar)
        label = lambda: app.query_one("#verify-label").render().plain  # noqa: E731
        await until(pilot, steps[0].is_set, "the first update")
        await until(pilot, lambda: "running up to 40 steps" in label(), "the running label")
        assert (bar.total, bar.progress) == (4, 1)  # the second value of four
        go[0].set()
        await until(pilot, lambda: "3.0 s so far" in label(), "the tick")
        go[1].set()
        await until(pilot, lambda: "reached step 17 of 40" in label(), "the ended label")
        assert (bar.total, bar.progress) == (40, 17)
        go[2].set()
        await notice(pilot, app, "use-bf16: ")
        assert bar.total is None


async def test_v_without_a_verifier_module_says_so(fp16_report):
    app = DiagnoseApp(fp16_report, verifier=_missing)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        await until(pilot, lambda: notifications(app), "the verdict's notice")
        assert any("verification is not available" in m for m in notifications(app))
        assert fp16_report.fixes[0].verified is None


def _missing(report, fix_id, progress):
    raise ImportError("No module named 'diagnose.verify'")


def _rerun(report, fix_id, verified, note=None):
    """What a verifier hands back: the fix as the re-run left it."""
    fix = next(f for f in report.fixes if f.id == fix_id)
    return fix.model_copy(update={"verified": verified, "verify_note": note})


async def test_a_fix_that_could_not_be_re_run_is_not_called_failing(fp16_report):
    def verifier(report, fix_id, progress):
        return _rerun(report, fix_id, verified=None, note="not verified: no patch to run")

    app = DiagnoseApp(fp16_report, verifier=verifier)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        await until(pilot, lambda: notifications(app), "the verdict's notice")
        assert fp16_report.fixes[0].verified is None
        assert "use-bf16: not verified: not verified: no patch to run" in notifications(app)
        assert not any("still fails" in m for m in notifications(app))
        detail = app.query_one("#fix-detail").render().plain
        assert "re-run: not verified: no patch to run" in detail


@pytest.mark.slow
async def test_v_with_diagnoses_own_verifier_re_runs_the_patched_example(tmp_path):
    from diagnose.report import Report
    from tests.conftest import EXAMPLES, run_cli

    path = tmp_path / "r.json"
    out = run_cli(
        "run", "--format", "json", "--report", str(path), str(EXAMPLES / "fp16_overflow.py")
    )
    assert out.returncode == 1, out.stderr
    report = Report.load(path)
    app = DiagnoseApp(report)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        await until(pilot, lambda: notifications(app), "the verdict's notice")
        fix = report.fixes[0]
        assert fix.verified in (True, False), notifications(app)  # the run gave a verdict
        mark = "✓" if fix.verified else "✗"
        assert mark in app.query_one(FixList).get_option_at_index(0).prompt.plain
        assert any(m.startswith(f"{fix.id}: ") for m in notifications(app))


def _saved_report(folder: Path, named: str, script: Path) -> Path:
    """A report in ``folder`` naming ``named``, made from ``script``: use-bf16 with its patch."""
    import hashlib

    from diagnose.patches import attach_patches
    from diagnose.report import Event, Fix, Report, ScriptInfo

    report = Report(
        status="nonfinite",
        script=ScriptInfo(path=named, sha256=hashlib.sha256(script.read_bytes()).hexdigest()),
        event=Event(kind="nonfinite", phase="forward", message="inf", dtype="float16"),
        fixes=[Fix(id="use-bf16", score=0.9, title="Train in bfloat16", why="", example_patch="")],
    )
    attach_patches(report, script)
    path = folder / "report.json"
    report.write(path)
    return path


CRLF_SCRIPT = b"import torch\r\n\r\nmodel = torch.nn.Linear(3, 1).half()\r\n"


async def test_a_applies_through_the_same_safe_core_as_the_command(tmp_path):
    """Shown from another folder, the report's script beside it is patched, its CRLF kept."""
    from diagnose.report import Report

    script = tmp_path / "train.py"
    script.write_bytes(CRLF_SCRIPT)
    path = _saved_report(tmp_path, "train.py", script)
    app = DiagnoseApp(Report.load(path), report_path=path)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: notifications(app), "the outcome's notice")
    assert script.read_bytes() == CRLF_SCRIPT.replace(b".half()", b".bfloat16()")
    assert (tmp_path / "train.py.diagnose-bak").read_bytes() == CRLF_SCRIPT
    assert any(m.startswith("Applied use-bf16") for m in notifications(app))


async def test_a_refuses_a_report_naming_a_file_outside_its_folder(tmp_path):
    from diagnose.report import Report

    other = tmp_path / "elsewhere" / "train.py"
    other.parent.mkdir()
    other.write_bytes(CRLF_SCRIPT)
    reports = tmp_path / "reports"
    reports.mkdir()
    path = _saved_report(reports, "../elsewhere/train.py", other)
    app = DiagnoseApp(Report.load(path), report_path=path)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: notifications(app), "the outcome's notice")
    assert other.read_bytes() == CRLF_SCRIPT
    assert sorted(p.name for p in other.parent.iterdir()) == ["train.py"]
    assert any(
        m.startswith("Could not apply use-bf16:") and "outside" in m for m in notifications(app)
    )


async def test_v_never_runs_a_script_a_crafted_report_names_outside_its_folder(tmp_path):
    from diagnose.report import Report

    marker = tmp_path / "ran"
    other = tmp_path / "elsewhere" / "train.py"
    other.parent.mkdir()
    other.write_text(
        f"open({str(marker)!r}, 'w').close()\nimport torch\nmodel = torch.nn.Linear(3, 1).half()\n"
    )
    reports = tmp_path / "reports"
    reports.mkdir()
    path = _saved_report(reports, "../elsewhere/train.py", other)
    app = DiagnoseApp(Report.load(path), report_path=path)
    async with app.run_test(size=(80, 24)) as pilot:
        await show_tab(pilot, "4")
        await pilot.press("v")
        await until(pilot, lambda: notifications(app), "the verdict's notice")
    assert not marker.exists()
    assert any(m.startswith("not verified:") and "outside" in m for m in notifications(app))
