"""``--verify`` for the lower-learning-rate fix: search a ladder of values, keep the largest
that works.

One value per patched run, from ``lr_size.lr_ladder`` (the suggestion, then tenfold steps
down). A value works when the run stays finite *and* its loss ends below where it started:
an lr so small that nothing moves is no fix. The largest such value becomes the fix's patch,
and its note says what was tried and what each run did.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from diagnose.formatting import num
from diagnose.patches.lr_size import candidate_lr, lr_ladder, user_lr
from diagnose.report import Fix, Report
from diagnose.verify_progress import OnProgress, Progress

FIX_ID = "lower-learning-rate"


def searchable(fix: Fix, report: Report) -> bool:
    """Whether ``fix`` is the lr fix and the run's lr is known (else: one plain re-run)."""
    return fix.id == FIX_ID and user_lr(report) is not None


def search_lr(
    fix: Fix,
    script: Path,
    report: Report,
    max_steps: int | None,
    timeout: float,
    progress: OnProgress | None = None,
) -> None:
    """Try each rung; set ``fix.verified``, its patch and notes from the largest that works."""
    from diagnose.patches import make_patch
    from diagnose.verify import run_change

    current = user_lr(report)
    assert current is not None  # searchable() said so
    ladder = lr_ladder(report, current)
    tried: list[str] = []
    any_finite_run = False
    for index, value in enumerate(ladder, start=1):
        label = f"lr {num(value)}"
        with candidate_lr(value):
            result = make_patch(fix.id, script, report)
        if not result.runnable:
            fix.verify_note = f"not verified: {result.note or 'no patch to run'}"
            return
        if progress is not None:
            progress(Progress(fix.id, label, index, len(ladder)))
        outcome = run_change(script, result, report.script.argv, max_steps, timeout)
        verdict, works = judge_candidate(outcome.verified, outcome.note, outcome.data)
        if progress is not None:
            steps = _steps(outcome.data)
            progress(Progress(fix.id, label, index, len(ladder), steps, verdict))
        tried.append(f"{label}: {verdict}")
        any_finite_run = any_finite_run or outcome.verified is True
        if works:
            fix.verified = True
            fix.patch, fix.patch_note = result.diff, result.note
            fix.patch_file, fix.patch_argv = result.file, result.argv
            fix.verify_note = _summary(label, verdict, tried[:-1])
            return
    fix.verified = False if not any_finite_run and _all_judged(tried) else None
    fix.verify_note = "no value on the ladder worked; tried " + "; ".join(tried)


def judge_candidate(
    verified: bool | None, note: str, data: dict[str, Any] | None
) -> tuple[str, bool]:
    """One rung's verdict in words, and whether it works (finite and the loss went down)."""
    if verified is not True:
        return note, False
    from diagnose.verify import loss_words

    loss = loss_words(data)
    if loss is None:
        return f"{note}; its loss was not recorded", False
    return f"{note}; {loss[0]}", loss[1]


def _steps(data: dict[str, Any] | None) -> int | None:
    from diagnose.verify import steps_reached

    return steps_reached(data)


def _summary(label: str, verdict: str, before: list[str]) -> str:
    out = f"verified {label}, the largest value tried that works: {verdict}"
    if before:
        out += "; larger values failed: " + "; ".join(before)
    return out


def _all_judged(tried: list[str]) -> bool:
    """Every rung ran to a verdict (none timed out or went unchecked)."""
    return not any("not verified" in t or "could not be checked" in t for t in tried)
