"""DiagnoseApp: the verdict on top, the evidence in tabs, a guided walkthrough, keys in the footer."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import DataTable, Footer, OptionList, TabbedContent, TabPane

from diagnose.errors import UsageError
from diagnose.render import RENDERERS, Renderer
from diagnose.report import Fix, Report
from diagnose.safetext import paste_safe
from diagnose.userwrite import OutputExists, write_output
from diagnose.verify_progress import OnProgress
from tui.messages import Applied, Verified, VerifyProgress
from tui.screens.confirm import ConfirmScreen
from tui.screens.fix_details import FixDetailsScreen
from tui.screens.frame_details import FrameDetailsScreen
from tui.screens.keys import KeysScreen
from tui.text import literal, one_line, safe
from tui.widgets.config_view import ConfigView
from tui.widgets.fix_list import FixList
from tui.widgets.fixes_view import FixesView
from tui.widgets.frames_table import FramesTable
from tui.widgets.history_view import HistoryView
from tui.widgets.match_list import MatchList
from tui.widgets.matches_view import MatchesView
from tui.widgets.verdict import Verdict
from tui.widgets.walkthrough_view import WalkthroughView

TABS = ("walkthrough", "frames", "history", "fixes", "matches", "config")
TITLES = {
    "walkthrough": "Walkthrough",
    "frames": "Frames",
    "history": "History",
    "fixes": "Fixes",
    "matches": "Matches",
    "config": "Config",
}
# What each tab focuses when it is shown, so its keys work at once.
FOCUS = {
    "walkthrough": WalkthroughView,
    "frames": FramesTable,
    "history": HistoryView,
    "fixes": FixList,
    "matches": MatchList,
    "config": ConfigView,
}

Verifier = Callable[[Report, str, OnProgress], Fix]
"""Re-runs one fix of the report, telling each re-run's progress; returns the fix as verified."""
"""Re-runs the report's script with one fix applied; returns that fix with its verdict."""
Patcher = Callable[[Report, str], object]
"""Writes one fix's patch into the report's script; returns what to say about it (or None)."""


class DiagnoseApp(App[int]):
    """Shows one Report. ``verifier`` / ``patcher`` default to diagnose's own (imported lazily)."""

    CSS_PATH = "app.tcss"
    TITLE = "diagnose"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "show_keys", "Keys", id="app.keys"),
        Binding("p", "jump_to_producer", "Producer", id="app.producer"),
        Binding("w", "show_tab('walkthrough')", "Walk", show=False, id="app.walk"),
        *(
            Binding(str(n), f"show_tab('{tab}')", TITLES[tab], show=False, id=f"app.tab.{tab}")
            for n, tab in enumerate(TABS, 1)
        ),
        Binding("right_square_bracket", "cycle_tab(1)", "Next tab", show=False, id="app.next-tab"),
        Binding("left_square_bracket", "cycle_tab(-1)", "Prev tab", show=False, id="app.prev-tab"),
    ]

    def __init__(
        self,
        report: Report,
        *,
        report_path: Path | None = None,
        verifier: Verifier | None = None,
        patcher: Patcher | None = None,
    ) -> None:
        super().__init__()
        self.report = report
        self.report_path = report_path
        self._verifier = verifier
        self._patcher = patcher
        self.sub_title = one_line(report_path if report_path else report.script.path)

    # ----------------------------------------------------------------- layout
    def compose(self) -> ComposeResult:
        report = self.report
        yield Verdict(report, self.report_path, id="verdict")
        with TabbedContent(initial="walkthrough", id="tabs"):
            with TabPane(TITLES["walkthrough"], id="walkthrough"):
                yield WalkthroughView(report, id="walk")
            with TabPane(_count("Frames", len(report.frames)), id="frames"):
                yield FramesTable(report.frames, report.event, id="frames-table")
            with TabPane(TITLES["history"], id="history"):
                yield HistoryView(report, id="history-view")
            with TabPane(_count("Fixes", len(report.fixes)), id="fixes"):
                yield FixesView(report, id="fixes-view")
            with TabPane(_count("Matches", len(report.matches)), id="matches"):
                yield MatchesView(report, id="matches-view")
            with TabPane(TITLES["config"], id="config"):
                yield ConfigView(report, id="config-view")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(WalkthroughView).focus()
        for warning in self.report.warnings:
            self.notify(
                warning, title="report", severity="warning", timeout=2 * self.NOTIFICATION_TIMEOUT
            )

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast of this app: its text is made terminal-safe, and markup is off unless a
        caller asks for it, since the messages quote report text, paths and exceptions."""
        super().notify(
            safe(message), title=safe(title), severity=severity, timeout=timeout, markup=markup
        )

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    # ----------------------------------------------------------------- navigation
    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._focus_tab(tab)

    def action_cycle_tab(self, delta: int) -> None:
        i = TABS.index(self.active_tab)
        self.action_show_tab(TABS[(i + delta) % len(TABS)])

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id or ""
        if tab in FOCUS and not isinstance(self.focused, FOCUS[tab]):
            self._focus_tab(tab)

    def _focus_tab(self, tab: str) -> None:
        self.query_one(f"#{tab}").query_one(FOCUS[tab]).focus()

    def action_jump_to_producer(self) -> None:
        table = self.query_one(FramesTable)
        if table.producer is None:
            self.notify("This report names no producer frame.")
            return
        self.action_show_tab("frames")
        table.go_to_producer()

    @on(WalkthroughView.Open)
    def _open_step_view(self, message: WalkthroughView.Open) -> None:
        if message.tab == "frames":
            self.action_jump_to_producer()
        else:
            self.action_show_tab(message.tab)

    @on(DataTable.RowSelected, "#frames-table")
    def _frame_selected(self, event: DataTable.RowSelected) -> None:
        frames = self.query_one(FramesTable).frames
        frame = frames[event.cursor_row]
        self.push_screen(
            FrameDetailsScreen(
                frame, row=event.cursor_row + 1, rows=len(frames), event=self.report.event
            )
        )

    @on(OptionList.OptionSelected, "#fix-list")
    def _fix_selected(self, event: OptionList.OptionSelected) -> None:
        fixes = self.report.fixes
        i = event.option_index
        if 0 <= i < len(fixes):
            self.push_screen(FixDetailsScreen(fixes[i], rank=i + 1, of=len(fixes)))

    def action_show_keys(self) -> None:
        sections = [
            ("everywhere", self.BINDINGS),
            ("walkthrough", WalkthroughView.BINDINGS),
            ("frames", FramesTable.BINDINGS),
            ("history", HistoryView.BINDINGS),
            ("fixes", [*FixesView.BINDINGS, *FixList.BINDINGS]),
            ("matches", MatchList.BINDINGS),
            ("config", ConfigView.BINDINGS),
            ("frame details", FrameDetailsScreen.BINDINGS),
            ("fix details", FixDetailsScreen.BINDINGS),
            ("palette", [Binding(self.COMMAND_PALETTE_BINDING, "", "Command palette")]),
        ]
        self.push_screen(KeysScreen(sections))

    # ----------------------------------------------------------------- fixes
    @on(FixesView.Requested)
    def _fix_requested(self, message: FixesView.Requested) -> None:
        {"copy": self.copy_patch, "apply": self.ask_apply, "verify": self.verify}[message.action](
            message.fix
        )

    def selected_fix(self) -> Fix | None:
        return self.query_one(FixesView).fix

    def copy_patch(self, fix: Fix | None = None) -> None:
        fix = fix or self.selected_fix()
        if fix is None:
            self.notify("No fix to copy.", severity="warning")
            return
        raw = fix.patch or fix.example_patch
        text = paste_safe(raw)
        self.copy_to_clipboard(text)
        what = "patch" if fix.patch else "example (no concrete patch)"
        made_safe = " (characters a terminal would act on were removed or shown as \\xNN)"
        self.notify(f"Copied the {what} of {safe_id(fix)}{made_safe if text != raw else ''}.")

    def ask_apply(self, fix: Fix) -> None:
        if not fix.patch:
            note = fix.patch_note or "the fix has no concrete patch for this script"
            self.notify(f"Nothing to apply: {note}", severity="warning")
            return
        question = Text("Apply ")
        question.append_text(literal(fix.title, "bold"))
        question.append(" to ")
        question.append_text(literal(self.report.script.path, "bold"))
        question.append("?\nA backup of the script is written first.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._apply(fix.id)
            else:
                self.notify("Not applied.")

        self.push_screen(ConfirmScreen(question), answered)

    @work(thread=True, exclusive=True, group="apply")
    def _apply(self, fix_id: str) -> None:
        """Writes the user's script: off the UI thread, the outcome posted as ``Applied``."""
        try:
            patcher = self._patcher or _default_patcher(self.report_path)
        except ImportError as exc:
            self.post_message(Applied(fix_id, error=f"Applying patches is not available: {exc}"))
            return
        try:
            result = patcher(self.report, fix_id)
        except Exception as exc:
            self.post_message(Applied(fix_id, error=f"Could not apply {fix_id}: {exc}"))
            return
        self.post_message(Applied(fix_id, detail=None if result in (None, True) else str(result)))

    @on(Applied)
    def _applied(self, message: Applied) -> None:
        if message.error is not None:
            self.notify(message.error, severity="error")
            return
        detail = f" ({message.detail})" if message.detail else ""
        self.notify(f"Applied {message.fix_id}{detail}.")

    def verify(self, fix: Fix) -> None:
        view = self.query_one(FixesView)
        if fix.id in view.verifying:
            self.notify(f"{fix.id} is already being verified.")
            return
        view.verifying = view.verifying | {fix.id}
        self._verify(fix.id)

    @work(thread=True, group="verify")
    def _verify(self, fix_id: str) -> None:
        """Re-runs the patched script: seconds to minutes, so never on the UI thread."""
        try:
            verifier = self._verifier or _default_verifier(self.report_path)
            fix = verifier(self.report, fix_id, lambda u: self.post_message(VerifyProgress(u)))
            self.post_message(Verified(fix_id, fix=fix))
        except ImportError as exc:
            self.post_message(Verified(fix_id, error=f"verification is not available: {exc}"))
        except UsageError as exc:  # the report's script is not one verify may run
            self.post_message(Verified(fix_id, error=f"not verified: {exc}"))
        except Exception as exc:
            error = f"verification of {fix_id} failed: {type(exc).__name__}: {exc}"
            self.post_message(Verified(fix_id, error=error))

    @on(VerifyProgress)
    def _verify_progress(self, message: VerifyProgress) -> None:
        """Show where the re-run is (the view draws it as plain text, never markup)."""
        self.query_one(FixesView).show_progress(message.update)

    @on(Verified)
    def _verified(self, message: Verified) -> None:
        """Record the verdict in the report, then end the view's 'verifying' state (it redraws)."""
        fix_id, outcome = message.fix_id, message.fix
        fix = next((f for f in self.report.fixes if f.id == fix_id), None)
        if fix is not None and outcome is not None:
            fix.verified, fix.verify_note = outcome.verified, outcome.verify_note
            if outcome.patch is not None:  # an lr search verified a value of its own
                fix.patch, fix.patch_note = outcome.patch, outcome.patch_note
        view = self.query_one(FixesView)
        view.verifying = view.verifying - {fix_id}
        if message.error is not None or outcome is None:
            self.notify(message.error or f"{fix_id}: no verdict", severity="error")
        elif outcome.verified:
            self.notify(f"{fix_id}: verified, the patched run is clean.")
        elif outcome.verified is False:
            self.notify(f"{fix_id}: the patched run still fails.", severity="warning")
        else:
            note = outcome.verify_note or "the fix could not be re-run"
            self.notify(f"{fix_id}: not verified: {note}", severity="warning")

    # ----------------------------------------------------------------- palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for renderer in RENDERERS.values():
            yield SystemCommand(
                f"Export {renderer.title}",
                f"Write the report as {renderer.title}",
                partial(self.export, renderer),
            )
        yield SystemCommand("Copy patch", "Copy the selected fix's patch", self.copy_patch)
        yield SystemCommand(
            "Jump to producer",
            "Show the frame where the inf/nan was born",
            self.action_jump_to_producer,
        )
        yield SystemCommand(
            "Walkthrough",
            "Go through the diagnosis step by step",
            lambda: self.action_show_tab("walkthrough"),
        )
        yield SystemCommand("All keys", "List every key", self.action_show_keys)

    def export_path(self, suffix: str) -> Path:
        """Next to the opened report (or in the current folder), never over the report itself."""
        if self.report_path is not None:
            base = self.report_path.with_suffix("")
        else:
            base = Path.cwd() / "diagnose-report"
        target = base.with_suffix(suffix)
        if self.report_path is not None and target.resolve() == self.report_path.resolve():
            target = base.with_name(base.name + ".export" + suffix)
        return target

    def export(self, renderer: Renderer) -> None:
        """Write the report in ``renderer``'s format next to the opened report: a new file,
        or -- once the user says yes -- over their own file of that name; never through a
        link, never over another user's file (``diagnose.userwrite.write_output``)."""
        path = self.export_path(renderer.suffix)
        try:
            data = (renderer.write(self.report, False).rstrip("\n") + "\n").encode("utf-8")
        except Exception as exc:
            self.notify(f"Export failed: {one_line(exc)}", severity="error")
            return
        if not self._write_export(path, data, replace=False):
            question = Text("Replace ")
            question.append_text(literal(path, "bold"))
            question.append("?\nIt exists; the export would take its place.")

            def answered(yes: bool | None) -> None:
                if yes:
                    self._write_export(path, data, replace=True)
                else:
                    self.notify(f"Not exported: {one_line(path)} kept as it was.")

            self.push_screen(ConfirmScreen(question), answered)

    def _write_export(self, path: Path, data: bytes, replace: bool) -> bool:
        """Write one export and say so; False only when a file is there and ``replace`` is
        False (the caller asks first)."""
        try:
            written = write_output(path, data, replace=replace)
        except OutputExists:
            return False
        except (UsageError, OSError) as exc:
            self.notify(f"Export failed: {one_line(exc)}", severity="error")
            return True
        self.notify(f"Wrote {one_line(written)}")
        return True


def _count(title: str, n: int) -> str:
    return f"{title} {n}" if n else title


def safe_id(fix: Fix) -> str:
    return safe(fix.id)


def _default_verifier(report_path: Path | None = None) -> Verifier:
    """Verification runs the report's script, so it runs only the script ``apply`` would
    patch: the report's own, inside the report's or the current folder, with the report's
    hash (a crafted report cannot make the UI run another program)."""
    from diagnose.patches.target import locate_script
    from diagnose.verify import verify_fixes

    report_dir = Path(os.path.abspath(report_path)).parent if report_path else None

    def verify(report: Report, fix_id: str, progress: OnProgress) -> Fix:
        """Verify one fix: a copy of the report holding only that fix, so the user's list
        keeps its order and the other fixes are not re-run."""
        target = locate_script(report, report_dir=report_dir)
        single = report.model_copy(deep=True)
        single.fixes = [f for f in single.fixes if f.id == fix_id]
        if not single.fixes:
            raise LookupError(f"the report has no fix {fix_id}")
        verified = verify_fixes(single, top=1, script_path=target.file.path, progress=progress)
        return verified.fixes[0]

    return verify


def _default_patcher(report_path: Path | None = None) -> Patcher:
    """The same safe core as ``diagnose apply`` (no ``--force``): the report's own script,
    looked for in the current folder and the report file's folder."""
    from diagnose.patches import apply_patch

    report_dir = Path(os.path.abspath(report_path)).parent if report_path else None

    def apply(report: Report, fix_id: str) -> object:
        return apply_patch(report, fix_id, backup=True, report_dir=report_dir)

    return apply


__all__ = ["DiagnoseApp"]
