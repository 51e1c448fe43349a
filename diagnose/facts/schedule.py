"""What the run did with its learning rate: warmup seen in the lr history, and how far the lr
the user set is above the usual for the run.

A warmup is what the run did, not only what a scheduler object says: a hand-written loop that
sets ``param_group["lr"]`` each step leaves no scheduler behind, but its history shows the lr
rising over the first steps. ``lr_vs_usual`` compares the user's lr with the framework's or the
script's own default where there is one (``diagnose.patches.lr_size``), which a fix for an lr
orders of magnitude too high needs: a warmup or a clip cannot help there.
"""

from __future__ import annotations

import math

from diagnose.report import Report

# The lr must rise by this factor within the first rows for a warmup (not float noise).
RISE = 1.5
WARMUP_WINDOW = 200  # rows from the start of the history looked at


def schedule_facts(report: Report, facts: dict) -> None:
    """Set ``lr.warmup``, ``lr.warmup_steps``, ``lr.varies``, ``lr.usual*``, ``lr.user``,
    ``lr_vs_usual``."""
    lrs = _lr_series(report)
    facts["lr.varies"] = len({round(v, 12) for v in lrs}) > 1
    steps = warmup_steps(lrs)
    framework = _framework_warmup(report)
    facts["lr.warmup"] = steps is not None or framework
    facts["lr.warmup_steps"] = steps
    _usual_facts(report, facts)


def warmup_steps(lrs: list[float]) -> int | None:
    """Steps the lr kept rising from the start, when it rose by ``RISE`` or more (else None)."""
    if len(lrs) < 2 or lrs[0] < 0:
        return None
    peak = 0
    for i in range(1, len(lrs)):
        if lrs[i] < lrs[i - 1]:
            break
        peak = i
    if peak == 0 or lrs[peak] < max(lrs[0], 0.0) * RISE or lrs[peak] <= 0:
        return None
    return peak


def _lr_series(report: Report) -> list[float]:
    """The lr of the first history rows that record one, in order."""
    out = []
    for row in report.history[:WARMUP_WINDOW]:
        if isinstance(row.lr, int | float) and math.isfinite(row.lr):
            out.append(float(row.lr))
    return out


def _framework_warmup(report: Report) -> bool:
    """TrainingArguments asked for a warmup (its steps or ratio)."""
    hf = report.config.transformers or {}
    return any(
        isinstance(hf.get(key), int | float) and hf[key] > 0
        for key in ("warmup_steps", "warmup_ratio")
    )


def _usual_facts(report: Report, facts: dict) -> None:
    from diagnose.patches.lr_size import user_lr, usual_lr

    usual = usual_lr(report)
    if usual is None:
        return
    facts["lr.usual"] = usual.lr
    facts["lr.usual_source"] = usual.source
    lr = user_lr(report)
    if lr is not None:
        facts["lr.user"] = lr
    if lr is not None and usual.lr > 0:
        facts["lr_vs_usual"] = lr / usual.lr
