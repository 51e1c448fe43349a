"""``--verify`` for the lower-learning-rate fix: search a ladder of values, keep the largest
that works.

One value per patched run, from ``lr_size.lr_ladder`` (the suggestion, then tenfold steps
down). A value works by the rule every fix is verified by (``verify._judge``): the run stays
finite *and* its loss ends below where it started, so an lr so small that nothing moves is no
fix. The first (largest) such value becomes the fix's patch, and its note says what was tried
and what each run did; it is "the largest value tried that works" only when larger ones were
tried and failed.
"""

from __future__ import annotations

import time
from dataclasses import replace
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
    from diagnose.verify import run_change, ticker

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
        running = Progress(fix.id, label, index, len(ladder), of_steps=max_steps)
        started = time.monotonic()
        if progress is not None:
            progress(running)
        outcome = run_change(
            script,
            result,
            report.script.argv,
            max_steps,
            timeout,
            on_tick=ticker(progress, running),
        )
        verdict, works = judge_candidate(outcome.verified, outcome.note, outcome.data)
        if progress is not None:
            progress(
                replace(
                    running,
                    steps=_steps(outcome.data),
                    verdict=verdict,
                    elapsed=time.monotonic() - started,
                )
            )
        tried.append(f"{label}: {verdict}")
        any_finite_run = any_finite_run or _finite(outcome.data)
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
    """One rung's verdict in words, and whether it works: the run's verdict by the rule of
    every fix (``verify._judge``: finite and the loss went down), which its note states."""
    if verified is not True:
        return note, False
    if "its loss fell" in note:
        return note, True
    # a verdict from elsewhere that does not say what the loss did: read it here
    from diagnose.verify import loss_words

    loss = loss_words(data)
    if loss is None:
        return f"{note}; its loss was not recorded", False
    return f"{note}; {loss[0]}", loss[1]


def _finite(data: dict[str, Any] | None) -> bool:
    from diagnose.verify import FINITE_RUN

    return isinstance(data, dict) and data.get("status") in FINITE_RUN


def _steps(data: dict[str, Any] | None) -> int | None:
    from diagnose.verify import steps_reached

    return steps_reached(data)


def _summary(label: str, verdict: str, before: list[str]) -> str:
    """The note of the value that works; "the largest value tried" only when larger ones were
    tried (the first value that works is the only one tried)."""
    if not before:
        return f"verified {label}: {verdict}"
    return (
        f"verified {label}, the largest value tried that works: {verdict}; larger values "
        "failed: " + "; ".join(before)
    )


def _all_judged(tried: list[str]) -> bool:
    """Every rung ran to a verdict (none timed out or went unchecked)."""
    return not any("not verified" in t or "could not be checked" in t for t in tried)
