"""Markdown report: the same story as the text report, for issues, PRs and notebooks."""

from __future__ import annotations

from diagnose.render.learning import learning_evidence
from diagnose.render.numbers import (
    HISTORY_COLUMNS,
    UNTRAINED_HINT,
    diverging_note,
    exit_note,
    flags,
    learning_note,
    num,
    optimizer_and_lr,
    safe,
    stats_of,
    steps_seen,
    stopped_note,
    together,
    untrained_note,
    where,
)
from diagnose.report import Event, Report


def _cell(text: object) -> str:
    return safe(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str, lang: str = "") -> list[str]:
    fence = "````" if "```" in text else "```"
    return [f"{fence}{lang}", safe(text.rstrip()), fence]


def _learning(report: Report) -> list[str]:
    evidence = learning_evidence(report)
    if evidence is None:
        return []
    bullets = [
        f"- {_cell(line)}" for line in (evidence.loss, evidence.lr, evidence.gradients) if line
    ]
    curve = ["", *_code(evidence.curve)] if evidence.curve else []
    return ["", "## Learning", "", *bullets, *curve]


def render_markdown(report: Report) -> str:
    out: list[str] = [f"# diagnose report: `{_cell(report.script.path)}`", ""]
    out += _verdict(report)
    for warning in report.warnings:
        out += ["", f"> warning: {_cell(warning)}"]
    out += _symptoms(report)
    out += _learning(report)
    out += _fixes(report)
    out += _frames(report)
    out += _history(report)
    out += _config(report)
    out += _matches(report)
    if report.event and report.event.traceback:
        out += ["", "## Traceback", "", *_code(report.event.traceback)]
    return "\n".join(out).rstrip() + "\n"


def _verdict(report: Report) -> list[str]:
    event = report.event
    learned = learning_note(report)
    if learned is not None and learned.broken:
        head = learned.headline[0].upper() + learned.headline[1:]
        return [
            f"**{_cell(head)}**",
            "",
            f"- {_cell(learned.evidence)}",
            f"- {_cell(learned.basis)}",
        ]
    if report.status == "interrupted" and event is None:
        stopped = stopped_note(report)
        return [
            f"**Interrupted**: {_cell(stopped or 'the run was stopped')}; no inf/nan "
            f"seen in {steps_seen(report)} before it stopped.",
            *_diverging(report),
        ]
    if report.status == "untrained":
        note = untrained_note(report)
        return [f"**{_cell(note[0].upper() + note[1:])}**: {UNTRAINED_HINT}."]
    if report.status == "clean" or event is None:
        weak = [f"\nBut {_cell(learned.headline)}."] if learned else []
        exited = exit_note(report)
        head = f"**Clean run, but {exited}**" if exited else "**Clean run**"
        return [
            f"{head}: no inf/nan seen in {steps_seen(report)}.",
            *_diverging(report),
            *weak,
        ]
    if event.kind == "exception":
        out = [
            f"**The script raised `{_cell(event.exception_type or 'an exception')}`**: "
            f"{_cell(event.message)}"
        ]
        return out + ([f"\n- on rank {event.rank}"] if event.rank is not None else [])
    return _nonfinite(event)


def _diverging(report: Report) -> list[str]:
    note = diverging_note(report)
    return [f"\nBut {_cell(note)}."] if note else []


def _nonfinite(event: Event) -> list[str]:
    step = "?" if event.step is None else event.step
    out = [
        f"**{_cell(event.message)}**",
        "",
        f"- born at: step {step}, phase `{_cell(event.phase or '?')}`, {_cell(where(event))}",
    ]
    if event.rank is not None:
        out.append(f"- rank: {event.rank}")
    if event.location and event.location.code:
        out.append(f"- code: `{_cell(event.location.code.strip())}`")
    out += [f"- {_cell(d)}" for d in event.details if d not in event.message]  # said once
    if event.sample_indices:
        label = (
            f"dataset samples that overflowed {_cell(event.batch_cast.dtype)}"
            if event.batch_cast is not None
            else "dataset samples with non-finite values"
        )
        out.append(f"- {label}: {event.sample_indices[:50]}")
    return out


def _symptoms(report: Report) -> list[str]:
    if not report.symptoms:
        return []
    out = ["", "## Symptoms", ""]
    for symptom in report.symptoms:
        out.append(
            f"- **{_cell(symptom.title or symptom.id)}** (`{_cell(symptom.id)}`, "
            f"confidence {symptom.confidence:.2f})"
        )
        out += [f"  - {_cell(e)}" for e in symptom.evidence]
    return out


_VERIFIED = {True: " — verified by a re-run", False: " — did not fix it in a re-run", None: ""}


def _fixes(report: Report) -> list[str]:
    if not report.fixes:
        return []
    out = ["", "## Fixes, best first", ""]
    for rank, fix in enumerate(report.fixes, 1):
        out += [
            f"### {rank}. {_cell(fix.title)} (`{_cell(fix.id)}`, score {fix.score:.2f})"
            f"{_VERIFIED[fix.verified]}",
            "",
            safe(fix.why),
            "",
        ]
        if fix.verify_note:
            out += [f"Re-run: {_cell(fix.verify_note)}", ""]
        if fix.rules:
            out += [f"Rules: {', '.join(f'`{_cell(r)}`' for r in fix.rules)}", ""]
        if fix.patch:
            target = f"`{_cell(fix.patch_file)}`" if fix.patch_file else "your script"
            out += [f"Patch against {target}:", "", *_code(fix.patch, "diff"), ""]
        elif fix.patch_note:
            out += [f"_{_cell(fix.patch_note)}_", ""]
        if fix.example_patch:
            out += ["Example:", "", *_code(fix.example_patch, "python"), ""]
    both = together(report)
    if both is not None:
        ids = " and ".join(f"`{_cell(i)}`" for i in both.fix_ids)
        out += [f"{ids} together:", "", *_code(both.command, "sh"), ""]
    return out


def _frames(report: Report) -> list[str]:
    if not report.frames:
        return []
    out = [
        "",
        "## Frames before the event" if report.event else "## Last frames of the run",
        "",
        "| | step | phase | module | type | out dtype | out abs min | out abs max | headroom | notes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for frame in report.frames[-21:]:
        o = stats_of(frame, "outputs")
        cells = [
            "**>>**" if frame.producer else "",
            str(frame.step if frame.step is not None else "-"),
            _cell(frame.phase or "-"),
            _cell(frame.module or "-"),
            _cell(frame.module_type or "-"),
            _cell(o.dtype or "-") if o else "-",
            num(o.abs_min) if o else "-",
            num(o.abs_max) if o else "-",
            num(o.headroom) if o else "-",
            _cell(flags(o)),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _history(report: Report) -> list[str]:
    if not report.history:
        return []
    out = ["", "## History", ""]
    if report.history_note:
        out += [_cell(report.history_note.message), ""]
    out += [
        "| step | loss | grad norm | max abs act | max abs out | lr | loss scale |",
        "|---|---|---|---|---|---|---|",
    ]
    for rec in report.history[-20:]:
        out.append(
            f"| {rec.step} | {num(rec.loss)} | {num(rec.grad_norm)} | "
            f"{num(rec.max_activation)} | {num(rec.max_output)} | {num(rec.lr)} | "
            f"{num(rec.loss_scale)} |"
        )
    out += ["", f"_{HISTORY_COLUMNS}_"]
    return out


def _config(report: Report) -> list[str]:
    c = report.config
    clip = f"{c.grad_clip.kind}, max {num(c.grad_clip.max)}" if c.grad_clip else "none"
    optimizer, lr = optimizer_and_lr(report)
    return [
        "",
        "## Config",
        "",
        f"- precision: `{_cell(c.precision)}`",
        f"- optimizer: `{_cell(optimizer)}`",
        f"- lr: {lr}",
        f"- gradient clipping: {clip}",
        f"- GradScaler: {'yes' if c.grad_scaler else 'no'}",
    ]


def _matches(report: Report) -> list[str]:
    if not report.matches:
        return []
    return [
        "",
        "## Related error records",
        "",
        *(
            f"- `{_cell(m.slug)}` ({m.score:.2f}){' — ' + _cell(m.reason) if m.reason else ''}"
            for m in report.matches
        ),
    ]
