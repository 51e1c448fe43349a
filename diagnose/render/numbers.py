"""Formatting shared by the renderers: numbers and stats cells (safe text: diagnose.safetext)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from diagnose.facts.heuristics import threshold
from diagnose.formatting import num
from diagnose.learning.findings import BROKEN
from diagnose.learning.findings import TITLES as LEARNING_TITLES
from diagnose.report import Event, Frame, Report, TensorStats
from diagnose.safetext import one_line, safe

__all__ = [
    "diverging_note",
    "flags",
    "learning_note",
    "num",
    "one_line",
    "optimizer_and_lr",
    "producer_frame",
    "safe",
    "stats_of",
    "steps_seen",
    "together",
    "untrained_note",
    "where",
]


def producer_frame(frames: Sequence[Frame]) -> Frame | None:
    """The frame the tracer flagged as the event's producer, or None when it flagged none.
    Every view marks this frame and no other: a non-finite frame that only passed the value
    on is not where it was born, so a report that names no producer shows none.
    """
    return next((frame for frame in frames if frame.producer), None)


def stats_of(frame: Frame, role: str) -> TensorStats | None:
    """The most telling stats of a frame's inputs/outputs/weights: the largest |x| one."""
    items: list[TensorStats] = getattr(frame, role)
    if not items:
        return None

    def key(s: TensorStats) -> float:
        if not s.finite:
            return math.inf
        return s.abs_max if s.abs_max is not None else -1.0

    return max(items, key=key)


def where(event: Event) -> str:
    """'module (Type)' / 'op' / 'file:line' summary of where an event was born."""
    parts = []
    if event.module:
        parts.append(f"{safe(event.module)} ({safe(event.module_type or '?')})")
    elif event.module_type:
        parts.append(safe(event.module_type))
    if event.op:
        parts.append(f"op {safe(event.op)}")
    if event.location:
        parts.append(f"{safe(event.location.file)}:{event.location.line}")
    return ", ".join(parts) or "unknown place"


FIRST_LINE = 120  # the verdict's first line, read once: longer is said on the next line


def split_first(line: str, width: int = FIRST_LINE) -> tuple[str, str | None]:
    """``line`` cut to at most ``width`` characters at the last "; ", ": ", ", " or space that
    fits, and the rest (None when it all fits)."""
    if len(line) <= width:
        return line, None
    for mark in ("; ", ": ", ", ", " "):
        at = line.rfind(mark, 0, width - len(mark.rstrip()) + 1)
        if at > width // 3:
            cut = at + len(mark.rstrip())
            return line[:cut], line[cut:].strip()
    return line[: width - 1] + "…", "…" + line[width - 1 :]


def born_headline(event: Event) -> str:
    """'inf born at step 0 in forward: 0 (Linear, float16), op linear' (safe text), for the
    first line of a non-finite verdict: the message with its numbers follows."""
    step = "?" if event.step is None else str(event.step)
    text = f"{safe(event.value or 'inf/nan')} born at step {step}"
    if event.phase:
        text += f" in {safe(event.phase)}"
    parts = []
    if event.module:
        dtype = f", {safe(event.dtype.replace('torch.', ''))}" if event.dtype else ""
        parts.append(f"{safe(event.module)} ({safe(event.module_type or '?')}{dtype})")
    elif event.dtype:
        parts.append(safe(event.dtype.replace("torch.", "")))
    if event.op:
        parts.append(f"op {safe(event.op)}")
    return f"{text}: {', '.join(parts)}" if parts else text


def flags(stats: TensorStats | None) -> str:
    if stats is None:
        return ""
    out = []
    if stats.nan:
        out.append(f"{stats.nan} nan")
    if stats.inf:
        out.append(f"{stats.inf} inf")
    if not out and not stats.finite:
        out.append("non-finite")
    if stats.near_limit:
        out.append("near limit")
    return ", ".join(out)


def optimizer_and_lr(report: Report) -> tuple[str, str]:
    """The run's optimizer and lr in words (unsafe text): a run that updated its weights by
    hand says so, with the lr its flag gave."""
    from diagnose.patches.lr_size import flag_lr

    config, learning = report.config, report.learning
    optimizer, lr = config.optimizer, num(config.lr, 3)
    initial = config.lr_initial
    if (
        isinstance(initial, int | float)
        and not isinstance(initial, bool)
        and config.lr is not None
        and num(initial, 3) != lr
    ):
        lr = f"{lr} at the last step (built with {num(initial, 3)})"  # a schedule changed it
    if (
        optimizer is None
        and learning is not None
        and learning.optimizers == 0
        and learning.backward_passes
    ):
        optimizer = "none (weights updated by hand)"
        flag = flag_lr(report)
        if config.lr is None and flag is not None:
            lr = f"{num(flag, 3)} (its lr flag)"
    return str(optimizer or "?"), lr


def diverging_note(report: Report) -> str | None:
    """For a clean run whose loss grew far over the run: it never turned non-finite, but it is
    diverging (the facts ``run.loss_growth``, ``run.loss_start``, ``run.loss_end``)."""
    facts = report.facts or {}
    growth = facts.get("run.loss_growth")
    if report.status not in ("clean", "interrupted") or not isinstance(growth, int | float):
        return None
    if growth < threshold("diverging_run", 100.0):
        return None
    note = (
        f"the loss grew {num(growth)}x over the run ({num(facts.get('run.loss_start'))}"
        f" -> {num(facts.get('run.loss_end'))}): it is diverging"
    )
    if report.symptoms:  # the symptoms and their fixes below say why and what to do
        return note
    return f"{note}; a lower learning rate or gradient clipping is the usual cure"


def stopped_note(report: Report) -> str | None:
    """For a run stopped before the script ended: 'interrupted at step N by SIGINT: ...'
    (raw text: the caller escapes it for its format)."""
    stopped = report.interruption
    if stopped is None:
        return None
    return (stopped.message.splitlines() or [stopped.cause])[0]  # the verdict is one line


def untrained_note(report: Report) -> str:
    """For a run that took no training step: how the script ended, for the verdict's first
    line (raw text: the caller escapes it)."""
    code = report.exit_code
    how = f"exited with status {code}" if code else "ended"
    return f"never trained: the script {how} before its first training step"


HISTORY_COLUMNS = (
    "max |act|: any module's output, on steps traced in detail (- otherwise); "
    "max |out|: the model's outputs"
)
UNTRAINED_HINT = "nothing was checked; the script's own output above says why it stopped"


def exit_note(report: Report) -> str | None:
    """For a clean run whose script then exited non-zero: what the verdict adds (raw text)."""
    if report.status != "clean" or not report.exit_code:
        return None
    return f"the script exited with status {report.exit_code}"


@dataclass
class LearningNote:
    """What a finite run showed about learning, for the verdict (raw text: callers escape)."""

    broken: bool
    headline: str
    evidence: str
    basis: str


def learning_note(report: Report) -> LearningNote | None:
    """For a finite run with symptoms of not learning: its headline and what it rests on."""
    if report.status not in ("clean", "silent"):
        return None
    found = [s for s in report.symptoms if s.id in LEARNING_TITLES]
    if report.status == "silent" and not any(s.confidence >= BROKEN for s in found):
        found = list(report.symptoms)  # a finite divergence: broken by its optimisation's cause
    if not found:
        return None
    top = found[0]
    title = top.title or LEARNING_TITLES.get(top.id, top.id)
    broken = report.status == "silent"
    headline = (
        f"the run stayed finite, but training is broken: {title[0].lower()}{title[1:]}"
        if broken
        else f"{title[0].lower()}{title[1:]} (a weak sign: confidence {top.confidence:.2f})"
    )
    learning = report.learning
    steps = learning.optimizer_steps if learning else report.steps_recorded
    passes = f" and {learning.backward_passes} backward passes" if learning else ""
    basis = f"judged at the end of the run, on {steps} optimizer steps{passes}"
    if learning and learning.optimizer_steps == 0 and learning.backward_passes:
        basis = f"judged at the end of the run, on {learning.backward_passes} backward passes"
    return LearningNote(broken, headline, top.evidence[0] if top.evidence else "", basis)


@dataclass(frozen=True)
class Together:
    """Fixes whose changes are all command-line edits that fit together in one command."""

    fix_ids: list[str]
    command: str


MAX_TOGETHER = 3  # the top fixes looked at


def together(report: Report) -> Together | None:
    """The command that applies the top fixes' command-line changes at once, when two or more
    of them change the command line and their changes touch different tokens (each fix alone
    says only its own command)."""
    original = list(report.script.argv)
    fixes = [f for f in report.fixes[:MAX_TOGETHER] if f.patch_argv is not None and not f.patch]
    if len(fixes) < 2:
        return None
    merged = list(original)
    changed: set[int] = set()
    tail: list[str] = []
    for fix in fixes:
        argv = list(fix.patch_argv or [])
        if len(argv) < len(original):
            return None  # a token removed: which ones the others meant is unknown
        for index, (before, after) in enumerate(zip(original, argv, strict=False)):
            if before == after:
                continue
            if index in changed and merged[index] != after:
                return None
            merged[index] = after
            changed.add(index)
        tail += [t for t in argv[len(original) :] if t not in tail]
    merged += tail
    if any(merged == list(f.patch_argv or []) for f in fixes):
        return None  # one of them already does it all
    import shlex

    command = shlex.join(["python", report.script.path, *merged])
    return Together([f.id for f in fixes], command)


def steps_seen(report: Report) -> str:
    """ "12 optimizer steps" -- or, for weights updated by hand (no torch optimizer), the
    update steps the tracer counted by backward pass."""
    steps = report.steps_recorded
    learning = report.learning
    by_hand = learning is not None and learning.optimizers == 0 and learning.backward_passes
    noun = "update step" if by_hand else "optimizer step"
    seen = f"{steps} {noun}{'s' if steps != 1 else ''}"
    unwatched = report.unwatched_steps
    if unwatched:
        seen += f" ({unwatched} more went unchecked: see the warnings)"
    return seen
