"""Plain-text report: a one-screen verdict first, then the evidence a reader would ask for next."""

from __future__ import annotations

import os
import textwrap

from diagnose.render.learning import learning_evidence
from diagnose.render.numbers import (
    HISTORY_COLUMNS,
    UNTRAINED_HINT,
    born_headline,
    diverging_note,
    exit_note,
    flags,
    learning_note,
    num,
    one_line,
    optimizer_and_lr,
    producer_frame,
    safe,
    split_first,
    stats_of,
    steps_seen,
    stopped_note,
    together,
    untrained_note,
)
from diagnose.report import Event, Fix, Frame, Report, TensorStats

MAX_FRAMES_SHOWN = 21
MAX_HISTORY_SHOWN = 8
WRAP = 92  # the width prose is wrapped to


class _Style:
    """ANSI styling that collapses to nothing when colour is off (NO_COLOR, not a terminal)."""

    def __init__(self, color: bool) -> None:
        self.color = color and not os.environ.get("NO_COLOR")

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31;1", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


def render_text(report: Report, *, color: bool = False) -> str:
    s = _Style(color)
    out: list[str] = []
    out += _verdict(report, s)
    for warning in report.warnings:
        out.append(f"warning: {safe(warning)}")
    said = {line.strip() for line in out}  # each sentence is said once: later sections skip it
    out += _symptoms(report, s, said)
    said |= {safe(e) for symptom in report.symptoms for e in symptom.evidence}
    out += _set_aside(report, s)
    out += _learning(report, s)
    if report.fixes:
        out += ["", s.bold("Fixes, best first")]
        for rank, fix in enumerate(report.fixes, 1):
            out += _fix(rank, fix, s, full=rank <= 3, said=said)
        both = together(report)
        if both is not None:
            ids = " and ".join(f"[{safe(i)}]" for i in both.fix_ids)
            out.append(f"  {ids} together: {safe(both.command)}")
    if report.frames:
        out += ["", *_frames(report.frames, s, report.event is not None)]
    if report.history:
        out += ["", *_history(report, s)]
    out += ["", *_config(report, s)]
    out += _matches(report, s)
    if report.event and report.event.traceback:
        out += ["", s.bold("Traceback"), safe(report.event.traceback.rstrip())]
    return "\n".join(out).rstrip() + "\n"


def _symptoms(report: Report, s: _Style, said: set[str]) -> list[str]:
    """Each symptom with its evidence, less what the verdict already said word for word."""
    if not report.symptoms:
        return []
    out = ["", s.bold("Symptoms")]
    for symptom in report.symptoms:
        title = f" — {safe(symptom.title)}" if symptom.title else ""
        out.append(f"  {safe(symptom.id)} ({symptom.confidence:.2f}){title}")
        out += [f"      {safe(e)}" for e in symptom.evidence if safe(e) not in said]
    return out


def _set_aside(report: Report, s: _Style) -> list[str]:
    """Symptoms the report's own facts rule out: named, with why, and no fix."""
    if not report.set_aside:
        return []
    out = ["", s.bold("Ruled out by the run's own facts")]
    for symptom in report.set_aside:
        why = [e for e in symptom.evidence if e.startswith("ruled out: ")]
        reason = why[-1].removeprefix("ruled out: ") if why else ""
        out.append(f"  {safe(symptom.id)}: {safe(reason)}")
    return out


def _learning(report: Report, s: _Style) -> list[str]:
    evidence = learning_evidence(report)
    if evidence is None:
        return []
    return ["", s.bold("Learning"), *(f"  {safe(line)}" for line in evidence.lines())]


def _matches(report: Report, s: _Style) -> list[str]:
    if not report.matches:
        return []
    out = ["", s.bold("Related error records")]
    for rank, match in enumerate(report.matches):
        reason = f" — {safe(match.reason)}" if match.reason else ""
        out.append(f"  {match.score:.2f}  {safe(match.slug)} [{safe(match.record_id)}]{reason}")
        if rank == 0 and match.kind != "related":
            out += [f"        - {safe(sol)}" for sol in match.solutions]
            if match.example_fix:
                out += [f"        {safe(line)}" for line in match.example_fix.splitlines()]
    return out


def _verdict(report: Report, s: _Style) -> list[str]:
    script = safe(report.script.path)
    event = report.event
    learned = learning_note(report)
    if learned is not None and learned.broken:
        first, rest = split_first(f"diagnose: {script}: {safe(learned.headline)}")
        return [
            s.red(first),
            *([f"  {rest}"] if rest else []),
            f"  {safe(learned.evidence)}",
            f"  {safe(learned.basis)}",
        ]
    if report.status == "interrupted" and event is None:
        lines = [
            s.yellow(f"diagnose: {script}: {safe(stopped_note(report) or 'interrupted')}"),
            f"  no inf/nan seen in {steps_seen(report)} before it stopped.",
        ]
        return lines + _diverging(report, s)
    if report.status == "untrained":
        first, rest = split_first(f"diagnose: {script}: {untrained_note(report)}")
        return [s.yellow(first), *([f"  {rest}"] if rest else []), f"  {UNTRAINED_HINT}."]
    if report.status == "clean" or event is None:
        seen = f" — no inf/nan seen in {steps_seen(report)}."
        exited = exit_note(report)
        lines = [
            s.yellow(f"diagnose: {script}: {exited} after a clean run") + seen
            if exited
            else s.green(f"diagnose: {script}: clean run") + seen
        ]
        weak = [s.yellow(f"  but {safe(learned.headline)}")] if learned else []
        return lines + _diverging(report, s) + weak
    if event.kind == "exception":
        return _exception(script, event, s)
    return _nonfinite(script, report, event, s)


def _diverging(report: Report, s: _Style) -> list[str]:
    note = diverging_note(report)
    return [s.yellow(f"  but {note}")] if note else []


def _exception(script: str, event: Event, s: _Style) -> list[str]:
    first, rest = split_first(
        f"diagnose: {script}: the script raised {safe(event.exception_type or 'an exception')}"
    )
    lines = [s.red(first), *([f"  {rest}"] if rest else []), f"  {safe(event.message)}"]
    lines += [f"  {safe(d)}" for d in event.details]
    if event.location:
        lines.append(f"  at {safe(event.location.file)}:{event.location.line}")
    if event.rank is not None:
        lines.append(f"  on rank {event.rank}")
    return lines


def _nonfinite(script: str, report: Report, event: Event, s: _Style) -> list[str]:
    first, rest = split_first(f"diagnose: {script}: {born_headline(event)}")
    lines = [s.red(first), *([f"  {rest}"] if rest else [])]
    if event.location:
        lines.append(f"  at:      {safe(event.location.file)}:{event.location.line}")
    if event.location and event.location.code:
        lines.append(f"  code:    {safe(event.location.code.strip())}")
    if event.location and event.location.via:
        lines.append(f"  inside:  {safe(event.location.via)} (library code your line called)")
    if event.call_chain and len(event.call_chain) > 1:
        lines.append(f"  called:  {_chain(event)}")
    if event.rank is not None:
        lines.append(f"  rank:    {event.rank}")
    lines += textwrap.wrap(
        safe(event.message),
        width=WRAP,
        initial_indent="  ",
        subsequent_indent="    ",
        break_on_hyphens=False,
    )
    lines += [f"  - {safe(detail)}" for detail in event.details if detail not in event.message]
    if event.cross_check is not None and event.cross_check.detail:
        lines.append(f"  checked: {safe(event.cross_check.detail)}")
    if event.sample_indices:
        shown = ", ".join(str(i) for i in event.sample_indices[:20])
        more = " ..." if len(event.sample_indices) > 20 else ""
        lines.append(f"  {_samples_label(event)}: {shown}{more}")
    if report.symptoms:
        top = report.symptoms[0]
        lines.append(
            f"  likely cause: {safe(top.title or top.id)} (confidence {top.confidence:.2f})"
        )
    if report.fixes:
        top_fix = report.fixes[0]
        lines.append(f"  best fix: {safe(top_fix.title)} [{safe(top_fix.id)}]")
    return lines


def _chain(event: Event) -> str:
    """The user's frames from the loop's call to the op's line: ``train.py:54 <module> ->
    model.py:21 forward`` (a file's folder only where it differs from the first frame's)."""
    frames = event.call_chain or []
    first = os.path.dirname(frames[0].file) if frames else ""
    parts = []
    for f in frames:
        shown = os.path.basename(f.file) if os.path.dirname(f.file) == first else f.file
        parts.append(f"{safe(shown)}:{f.line} {safe(f.function or '?')}")
    return " -> ".join(parts)


def _fix(rank: int, fix: Fix, s: _Style, *, full: bool, said: set[str]) -> list[str]:
    verified = {True: " verified", False: " did not fix it in a re-run", None: ""}[fix.verified]
    lines = [
        f"  {rank}. {s.bold(safe(fix.title))} [{safe(fix.id)}] score {fix.score:.2f}{verified}"
    ]
    if fix.verify_note:
        lines.append(f"     re-run: {safe(fix.verify_note)}")
    if not full:
        return lines
    lines += textwrap.wrap(
        safe(fix.why), width=WRAP, initial_indent="     ", subsequent_indent="     "
    )
    if fix.rules:
        lines.append(s.dim(f"     rules: {safe(', '.join(fix.rules))}"))
    for evidence in [e for e in fix.evidence if safe(e) not in said][:4]:
        lines.append(s.dim(f"     evidence: {safe(evidence)}"))
    if fix.patch:
        target = "your script" if not fix.patch_file else safe(one_line(fix.patch_file))
        lines.append(f"     patch against {target}:")
        lines += [f"       {_diff_line(line, s)}" for line in fix.patch.rstrip().splitlines()]
    else:
        if fix.patch_note:
            lines.append(f"     {safe(fix.patch_note)}")
        if fix.example_patch:
            lines.append("     example:")
            lines += [f"       {safe(line)}" for line in fix.example_patch.rstrip().splitlines()]
    return lines


def _diff_line(line: str, s: _Style) -> str:
    line = safe(line)
    if line.startswith("+") and not line.startswith("+++"):
        return s.green(line)
    if line.startswith("-") and not line.startswith("---"):
        return s.red(line)
    return line


def _frames(frames: list[Frame], s: _Style, event: bool) -> list[str]:
    shown = frames[-MAX_FRAMES_SHOWN:]
    what = "Frames before the event" if event else "Last frames of the run"
    title = f"{what} (last {len(shown)} of {len(frames)}, oldest first)"
    header = (
        "",
        "step",
        "phase",
        "module",
        "type",
        "dtype",
        "in |x|max",
        "out |x|min",
        "out |x|max",
        "headroom",
        "notes",
    )
    rows = [header]
    producer = producer_frame(frames)
    for frame in shown:
        inp = stats_of(frame, "inputs")
        outp = stats_of(frame, "outputs")
        weight = stats_of(frame, "weights")
        notes = ", ".join(
            n
            for n in (
                flags(outp),
                f"weight |x|max {num(weight.abs_max)}" if weight else "",
            )
            if n
        )
        rows.append(
            (
                ">>" if frame is producer else "",
                "-" if frame.step is None else str(frame.step),
                one_line(frame.phase or "-"),
                _clip(one_line(frame.module or "-"), 40),
                one_line(frame.module_type or "-"),
                _dtype(outp or inp),
                num(inp.abs_max) if inp else "-",
                num(outp.abs_min) if outp else "-",
                num(outp.abs_max) if outp else "-",
                num(outp.headroom) if outp else "-",
                notes,
            )
        )
    return [s.bold(title), *_table(rows)]


def _dtype(stats: TensorStats | None) -> str:
    if stats is None or not stats.dtype:
        return "-"
    return one_line(stats.dtype.replace("torch.", ""))


def _history(report: Report, s: _Style) -> list[str]:
    shown = report.history[-MAX_HISTORY_SHOWN:]
    rows = [("step", "loss", "grad norm", "max |act|", "max |out|", "lr", "loss scale", "notes")]
    for rec in shown:
        notes = ", ".join(
            n
            for n in ("skipped" if rec.skipped else "", "near limit" if rec.near_limit else "")
            if n
        )
        rows.append(
            (
                str(rec.step),
                num(rec.loss),
                num(rec.grad_norm),
                num(rec.max_activation),
                num(rec.max_output),
                num(rec.lr),
                num(rec.loss_scale),
                notes,
            )
        )
    title = f"History (last {len(shown)} of {report.steps_recorded} steps)"
    note = [f"  {safe(report.history_note.message)}"] if report.history_note else []
    return [s.bold(title), *note, *_table(rows), s.dim(f"  {HISTORY_COLUMNS}")]


def _config(report: Report, s: _Style) -> list[str]:
    c = report.config
    clip = "none"
    if c.grad_clip:
        clip = f"by {c.grad_clip.kind}, max {num(c.grad_clip.max)}"
    optimizer, lr = optimizer_and_lr(report)
    parts = [
        f"precision {safe(c.precision)}",
        f"optimizer {safe(optimizer)}",
        f"lr {lr}",
        f"gradient clipping {clip}",
        f"GradScaler {'yes' if c.grad_scaler else 'no'}",
    ]
    lines = [s.bold("Config"), "  " + "; ".join(parts)]
    for framework, info in (("transformers", c.transformers), ("lightning", c.lightning)):
        if info is not None:
            keys = (
                "precision",
                "learning_rate",
                "max_grad_norm",
                "gradient_clip_val",
                "warmup_steps",
                "warmup_ratio",
                "gradient_accumulation_steps",
                "accumulate_grad_batches",
            )
            shown = ", ".join(f"{k} {_setting(info[k])}" for k in keys if _shown_setting(info, k))
            lines.append(f"  {framework}: {safe(shown) or 'used'}")
            notes = info.get("notes")
            for note in [notes] if isinstance(notes, str) else (notes or []):
                lines.append(f"  note: {safe(note)}")
    return lines


def _samples_label(event: Event) -> str:
    """What the event's dataset samples are: non-finite in the data, or finite values a cast
    to a narrower dtype made inf."""
    if event.batch_cast is not None:
        return f"dataset samples that overflowed {safe(event.batch_cast.dtype)}"
    return "dataset samples with non-finite values"


def _shown_setting(info: dict, key: str) -> bool:
    """Whether a framework setting is worth a word: set, and for a warmup ratio, not 0 (its
    default, which leaves ``warmup_steps`` to say what the warmup was)."""
    value = info.get(key)
    return value is not None and not (key == "warmup_ratio" and not value)


def _setting(value: object) -> str:
    """A framework setting as written: a float through the one number formatter."""
    return num(value) if isinstance(value, float) else str(value)


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]
