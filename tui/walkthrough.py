"""The guided path through a diagnosis: verdict, where, trend, evidence, fix, next steps.

Pure functions from a Report to a list of steps, so the path can be tested without a screen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.text import Text

from diagnose.render.numbers import producer_frame
from diagnose.report import Report
from tui.frame_refs import no_marked_rows, row_ref
from tui.summary import headline, top_fix, where
from tui.text import Palette, diff_text, literal, magnitude, num, plural


@dataclass
class Step:
    title: str
    body: Text
    tab: str | None = None  # the tab that shows this step in full ("o" opens it)


def build_steps(report: Report, palette: Palette) -> list[Step]:
    steps = [Step("Verdict", _verdict(report, palette))]
    if report.status == "untrained":
        steps.append(
            Step("Next", Text("Nothing was checked. q quits; the script's own output says why."))
        )
        return steps
    if report.status == "clean" or (report.status == "interrupted" and report.event is None):
        steps.append(Step("The run", _trend(report), "history"))
        steps.append(Step("Next", Text("Nothing to fix. q quits.")))
        return steps
    if report.status == "silent":
        steps.append(Step("What the run showed", _trend(report), "history"))
    elif report.event is not None and (
        report.status == "exception" or report.event.kind == "exception"
    ):
        steps.append(Step("The exception", _exception(report), "matches"))
    else:
        steps.append(Step("Where it was born", _born(report, palette), "frames"))
        steps.append(Step("What led there", _trend(report), "history"))
    steps.append(Step("Evidence", _evidence(report), "fixes"))
    steps.append(Step("The fix", _fix(report, palette), "fixes"))
    steps.append(Step("Next", _next(report)))
    return steps


def _verdict(report: Report, palette: Palette) -> Text:
    text = headline(report, palette)
    if report.event is not None:
        text.append("\n\n")
        text.append_text(literal(report.event.message))
    for warning in report.warnings:
        text.append("\n\n⚠ ", style=f"bold {palette.warning}")
        text.append_text(literal(warning))
    return text


def _born(report: Report, palette: Palette) -> Text:
    event = report.event
    text = Text()
    if event is None:
        return Text("The report does not say where the value was born.")
    text.append_text(where(report))
    if event.location and event.location.code:
        text.append("\n\n    ")
        text.append_text(literal(event.location.code.strip(), "bold"))
    if event.op_inputs:
        text.append(
            f"\n\nThe op's inputs were {'finite' if all(s.finite for s in event.op_inputs) else 'not all finite'}:"
        )
        for s in event.op_inputs:
            text.append("\n  • ")
            text.append_text(literal(s.name))
            text.append(f"  |x| max {magnitude(s, 'abs_max')}  headroom {num(s.headroom)}")
    for detail in event.details:
        if detail in event.message:
            continue  # the verdict step said it
        text.append("\n• ")
        text.append_text(literal(detail))
    frame = producer_frame(report.frames)
    if frame is not None:
        text.append(f"\n\nIn the Frames tab (2) it is {row_ref(report.frames, frame)}, marked ▶.")
    elif any(not f.finite for f in report.frames):
        text.append("\n\nNo row of the Frames tab is marked as its producer; its ✗ rows ")
        text.append("passed the value on.")
    elif report.frames:
        text.append("\n\n")
        text.append_text(literal(no_marked_rows(event, report.frames), "dim"))
    else:
        text.append("\n\nThis report has no frames recorded.", style="dim")
    return text


def _trend(report: Report) -> Text:
    history = report.history
    if not history:
        return Text("No per-step history was recorded.")
    text = Text(f"{plural(report.steps_recorded, 'step')} recorded.")
    for attr, label in (
        ("loss", "loss"),
        ("grad_norm", "grad norm"),
        ("max_activation", "largest |activation| (detailed steps)"),
        ("max_output", "largest |model output|"),
        ("loss_scale", "loss scale"),
    ):
        values = [getattr(h, attr) for h in history if getattr(h, attr) is not None]
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            continue
        first, last = finite[0], finite[-1]
        text.append(f"\n• {label}: {num(first)} → {num(last)}")
        if first and abs(first) > 0 and last / first >= 10:
            text.append(f"  (grew {_times(last / first)})", style="bold")
    skipped = sum(h.skipped for h in history)
    if skipped:
        text.append(f"\n• the GradScaler skipped {plural(skipped, 'step')}")
    return text


def _exception(report: Report) -> Text:
    event = report.event
    assert event is not None
    text = Text()
    text.append_text(literal(event.exception_type or "exception", "bold"))
    text.append(": ")
    text.append_text(literal(event.message))
    if event.location:
        text.append("\nat ")
        text.append_text(literal(f"{event.location.file}:{event.location.line}"))
    if report.matches:
        n = len(report.matches)
        records = plural(n, "dataset record")
        text.append(f"\n\n{records} {'matches' if n == 1 else 'match'}; the Matches tab has ")
        text.append("it." if n == 1 else "them.")
    return text


def _evidence(report: Report) -> Text:
    if not report.symptoms:
        return Text("No symptoms were derived from this run.")
    text = Text()
    for symptom in report.symptoms:  # in the order the text report lists them
        text.append_text(literal(symptom.title or symptom.id, "bold"))
        text.append(f"  {symptom.confidence:.0%}\n")
        for item in symptom.evidence:
            text.append("  • ")
            text.append_text(literal(item))
            text.append("\n")
    text.rstrip()
    return text


def _fix(report: Report, palette: Palette) -> Text:
    fix = top_fix(report)
    if fix is None:
        return Text("No fix was proposed for this run.")
    text = literal(fix.title, "bold")
    text.append(f"  score {num(fix.score)}\n\n")
    text.append_text(literal(fix.why))
    text.append("\n\n")
    if fix.patch:
        text.append_text(diff_text(fix.patch, palette))
    else:
        text.append_text(literal(fix.patch_note or fix.example_patch or ""))
    return text


def _next(report: Report) -> Text:
    """The keys that act on the top fix, named only when they apply to it."""
    fix = top_fix(report)
    keys = "? lists every key; ctrl+p opens the command palette (export, copy, jump)."
    if fix is None:
        return Text(f"No fix to act on. {keys}")
    n = len(report.fixes)
    text = Text(f"The Fixes tab (4) has {plural(n, 'fix', 'fixes')}, best first. For the top one: ")
    if fix.patch:
        text.append("c copies the patch, a applies it (a backup is kept), ")
        text.append("v re-runs the script with it to verify.")
    elif fix.patch_argv:
        text.append("nothing to patch; run the script with ")
        text.append_text(literal(" ".join(fix.patch_argv), "bold"))
        text.append(" instead.")
    else:
        text.append("it has no patch for this script")
        if fix.patch_note:
            text.append(" (")
            text.append_text(literal(fix.patch_note))
            text.append(")")
        text.append("; c copies its example to adapt by hand.")
    text.append(f"\n{keys}")
    return text


def _times(ratio: float) -> str:
    return f"{ratio:.1f}×" if ratio < 100 else f"{ratio:,.0f}×"
