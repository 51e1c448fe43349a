"""Ranked fixes: a list on the left, the selected fix's reasons and coloured patch on the right."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from diagnose.report import Fix, Report
from diagnose.safetext import one_line
from diagnose.verify_progress import Progress
from tui.text import Palette, diff_text, literal, num
from tui.widgets.fix_list import FixList


class FixesView(Horizontal):
    """``c`` copies the selected fix's patch, ``a`` applies it, ``v`` verifies it.

    What it shows follows two reactives: ``selected`` (the highlighted fix) redraws the
    detail, ``verifying`` (the fixes being re-run) redraws the marks, the detail and the
    progress line. The app sets ``verifying`` when a verification starts and ends.
    """

    # A key's footer hint says what it does to the selected fix: a fix without a patch has
    # "Copy example" on c and no "Apply" (a then only says why there is nothing to apply).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_patch", "Copy patch", id="fixes.copy"),
        Binding("c", "copy_example", "Copy example", id="fixes.copy-example"),
        Binding("a", "apply_patch", "Apply", id="fixes.apply"),
        Binding("a", "why_no_patch", "Why no patch", show=False, id="fixes.no-patch"),
        Binding("v", "verify", "Verify", id="fixes.verify"),
    ]

    selected: reactive[int] = reactive(0)
    verifying: reactive[frozenset[str]] = reactive(frozenset())
    progress_line: reactive[str] = reactive("")

    @dataclass
    class Requested(Message):
        """The user asked for ``action`` on ``fix``; the app does it."""

        action: Literal["copy", "apply", "verify"]
        fix: Fix

    def __init__(self, report: Report, **kwargs) -> None:
        super().__init__(**kwargs)
        self.report = report

    def compose(self) -> ComposeResult:
        yield FixList(id="fix-list")
        with Vertical(id="fix-side"):
            with Horizontal(id="verify-progress"):
                yield Label("", id="verify-label")
                yield ProgressBar(total=None, show_eta=False, show_percentage=False)
            with VerticalScroll(id="fix-detail-scroll"):
                yield Static(id="fix-detail")

    @property
    def fix(self) -> Fix | None:
        fixes = self.report.fixes
        return fixes[self.selected] if 0 <= self.selected < len(fixes) else None

    def watch_selected(self) -> None:
        self._show_detail()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Each of c's and a's two bindings applies to fixes with, or without, a patch."""
        fix = self.fix
        patched = fix is None or bool(fix.patch)
        if action in ("copy_patch", "apply_patch"):
            return patched
        if action in ("copy_example", "why_no_patch"):
            return not patched
        return True

    def watch_verifying(self, verifying: frozenset[str]) -> None:
        self.query_one("#verify-progress").set_class(bool(verifying), "-running")
        if not verifying:
            self.progress_line = ""
            self.query_one(ProgressBar).update(total=None, progress=0)
        self._show_label()
        self._show_list()
        self._show_detail()

    def watch_progress_line(self) -> None:
        self._show_label()

    def show_progress(self, update: Progress) -> None:
        """The latest update: its line, and the bar at what is known of the run's progress:
        the steps reached of its budget once it ended, its place on a ladder of values while
        it runs (the patched run is another process: its steps are known at its end)."""
        self.progress_line = update.line
        bar = self.query_one(ProgressBar)
        if update.verdict is not None and update.steps is not None and update.of_steps:
            bar.update(total=update.of_steps, progress=min(update.steps, update.of_steps))
        elif update.total > 1:
            bar.update(total=update.total, progress=update.index - 1)
        else:
            bar.update(total=None, progress=0)

    def _show_label(self) -> None:
        """The running verification: the latest progress update, else the fixes' names."""
        if self.progress_line:
            text = Text.assemble(literal(self.progress_line), " ")
        else:
            names = ", ".join(sorted(self.verifying))
            text = Text.assemble("verifying ", literal(names), " (re-running the script) ")
        self.query_one("#verify-label", Label).update(text)

    @on(OptionList.OptionHighlighted, "#fix-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_id and event.option_id.startswith("fix-"):
            self.selected = int(event.option_id.removeprefix("fix-"))

    def _show_list(self) -> None:
        """The options again, with the current marks; the highlight stays where it was."""
        option_list = self.query_one(FixList)
        highlighted = option_list.highlighted
        option_list.clear_options()
        palette = Palette.from_app(self.app)
        if not self.report.fixes:
            option_list.add_option(Option(Text("(no fixes proposed)", style="dim"), disabled=True))
            return
        for i, fix in enumerate(self.report.fixes):
            option_list.add_option(Option(self._label(i, fix, palette), id=f"fix-{i}"))
        option_list.highlighted = highlighted if highlighted is not None else 0

    def _label(self, i: int, fix: Fix, palette: Palette) -> Text:
        label = Text(f"{i + 1}. ", style="dim")
        label.append(f"{num(fix.score)} ", style="bold")
        label.append(_mark(fix, fix.id in self.verifying, palette))
        label.append(" ")
        label.append_text(literal(fix.title))
        return label

    def _show_detail(self) -> None:
        detail = self.query_one("#fix-detail", Static)
        fix = self.fix
        if fix is None:
            detail.update(Text("No fixes: nothing in the evidence pointed to one.", style="dim"))
            return
        detail.update(fix_detail(fix, Palette.from_app(self.app), fix.id in self.verifying))

    def action_copy_patch(self) -> None:
        self._request("copy")

    def action_copy_example(self) -> None:
        self._request("copy")

    def action_why_no_patch(self) -> None:
        self._request("apply")  # the app says why there is nothing to apply

    def action_apply_patch(self) -> None:
        self._request("apply")

    def action_verify(self) -> None:
        self._request("verify")

    def _request(self, action: Literal["copy", "apply", "verify"]) -> None:
        fix = self.fix
        if fix is None:
            self.app.notify("No fix selected.", severity="warning", markup=False)
            return
        self.post_message(self.Requested(action, fix))


def _mark(fix: Fix, running: bool, palette: Palette) -> Text:
    if running:
        return Text("…", style="bold")
    if fix.verified is True:
        return Text("✓", style=f"bold {palette.success}")
    if fix.verified is False:
        return Text("✗", style=f"bold {palette.error}")
    return Text("·", style="dim")


def fix_detail(fix: Fix, palette: Palette, running: bool = False) -> Text:
    """Everything about one fix, top to bottom in the order a reader needs it."""
    text = Text()
    text.append_text(literal(fix.title, "bold"))
    text.append(f"\nscore {num(fix.score)}  ·  id ")
    text.append_text(literal(fix.id))
    text.append("  ·  ")
    if running:
        text.append("verifying…", style="bold")
    elif fix.verified is True:
        text.append("verified: the patched run is clean", style=f"bold {palette.success}")
    elif fix.verified is False:
        text.append("verified: the patched run still fails", style=f"bold {palette.error}")
    else:
        text.append("not verified (v to verify)", style="dim")
    if fix.verify_note and not running:
        text.append("\nre-run: ")
        text.append_text(literal(fix.verify_note))
    text.append("\n\nWhy\n", style="bold underline")
    text.append_text(literal(fix.why))
    if fix.rules:
        text.append("\n\nRules  ", style="bold")
        text.append_text(literal(", ".join(fix.rules)))
    if fix.evidence:
        text.append("\n\nEvidence\n", style="bold underline")
        for item in fix.evidence:
            text.append("• ")
            text.append_text(literal(item))
            text.append("\n")
        text.rstrip()
    text.append_text(_patch_part(fix, palette))
    return text


def _patch_part(fix: Fix, palette: Palette) -> Text:
    """The patch (or why there is none), the example, and the keys that act on them."""
    text = Text()
    if fix.patch and fix.patch_file:
        text.append("\n\nPatch against ", style="bold underline")
        text.append_text(literal(one_line(fix.patch_file), "bold underline"))
        text.append("\n")
    else:
        text.append("\n\nPatch against your script\n", style="bold underline")
    if fix.patch:
        text.append_text(diff_text(fix.patch, palette))
    else:
        text.append_text(literal(fix.patch_note or "no concrete patch for this script", "dim"))
    if fix.patch_argv:
        text.append("\n\nRun with  ", style="bold")
        text.append_text(literal(" ".join(fix.patch_argv)))
    if fix.example_patch:
        text.append("\n\nExample\n", style="bold underline")
        text.append_text(literal(fix.example_patch))
    text.append("\n\n")
    if fix.patch:
        text.append("c copies the patch, a applies it (a backup is kept), v verifies it", "dim")
    elif fix.patch_argv:
        text.append("no patch to apply: run the script with the arguments above; ", "dim")
        text.append("c copies the example", "dim")
    else:
        text.append("c copies the example; there is no patch to apply", "dim")
    return text
