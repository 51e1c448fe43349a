"""Markdown report: the same story as the text report, for issues, PRs and notebooks."""

from __future__ import annotations

from diagnose.render.numbers import (
    diverging_note,
    flags,
    learning_note,
    num,
    safe,
    stats_of,
    stopped_note,
    where,
)
from diagnose.report import Report


def _cell(text: object) -> str:
    return safe(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str, lang: str = "") -> list[str]:
    fence = "````" if "```" in text else "```"
    return [f"{fence}{lang}", safe(text.rstrip()), fence]


def render_markdown(report: Report) -> str:
    out: list[str] = [f"# diagnose report: `{_cell(report.script.path)}`", ""]
    event = report.event
    stopped = stopped_note(report)
    learned = learning_note(report)
    if learned is not None and learned.broken:
        out.append(f"**{_cell(learned.headline[0].upper() + learned.headline[1:])}**")
        out += ["", f"- {_cell(learned.evidence)}", f"- {_cell(learned.basis)}"]
    elif report.status == "interrupted" and event is None:
        out.append(
            f"**Interrupted**: {_cell(stopped or 'the run was stopped')}; no inf/nan "
            f"seen in {report.steps_recorded} optimizer steps before it stopped."
        )
        note = diverging_note(report)
        if note:
            out.append(f"\nBut {_cell(note)}.")
    elif report.status == "clean" or event is None:
        out.append(f"**Clean run**: no inf/nan seen in {report.steps_recorded} optimizer steps.")
        note = diverging_note(report)
        if note:
            out.append(f"\nBut {_cell(note)}.")
        if learned:
            out.append(f"\nBut {_cell(learned.headline)}.")
    elif event.kind == "exception":
        out.append(
            f"**The script raised `{_cell(event.exception_type or 'an exception')}`**: "
            f"{_cell(event.message)}"
        )
        if event.rank is not None:
            out.append(f"\n- on rank {event.rank}")
    else:
        out.append(f"**{_cell(event.message)}**")
        out.append("")
        step = "?" if event.step is None else event.step
        out.append(
            f"- born at: step {step}, phase `{_cell(event.phase or '?')}`, {_cell(where(event))}"
        )
        if event.rank is not None:
            out.append(f"- rank: {event.rank}")
        if event.location and event.location.code:
            out.append(f"- code: `{_cell(event.location.code.strip())}`")
        out += [f"- {_cell(d)}" for d in event.details]
        if event.sample_indices:
            out.append(f"- dataset samples with non-finite values: {event.sample_indices[:50]}")
    for warning in report.warnings:
        out += ["", f"> warning: {_cell(warning)}"]

    if report.symptoms:
        out += ["", "## Symptoms", ""]
        for symptom in report.symptoms:
            out.append(
                f"- **{_cell(symptom.title or symptom.id)}** (`{_cell(symptom.id)}`, "
                f"confidence {symptom.confidence:.2f})"
            )
            out += [f"  - {_cell(e)}" for e in symptom.evidence]

    if report.fixes:
        out += ["", "## Fixes, best first", ""]
        for rank, fix in enumerate(report.fixes, 1):
            verified = {
                True: " — verified by a re-run",
                False: " — did not fix it in a re-run",
                None: "",
            }[fix.verified]
            out += [
                f"### {rank}. {_cell(fix.title)} (`{_cell(fix.id)}`, score {fix.score:.2f}){verified}",
                "",
                safe(fix.why),
                "",
            ]
            if fix.verify_note:
                out += [f"Re-run: {_cell(fix.verify_note)}", ""]
            if fix.rules:
                out.append(f"Rules: {', '.join(f'`{_cell(r)}`' for r in fix.rules)}")
                out.append("")
            if fix.patch:
                out += ["Patch against your script:", "", *_code(fix.patch, "diff"), ""]
            elif fix.patch_note:
                out += [f"_{_cell(fix.patch_note)}_", ""]
            if fix.example_patch:
                out += ["Example:", "", *_code(fix.example_patch, "python"), ""]

    if report.frames:
        out += [
            "",
            "## Frames before the event" if report.event else "## Last frames of the run",
            "",
            "| | step | phase | module | type | out dtype | out abs min | out abs max | headroom | notes |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for frame in report.frames[-21:]:
            o = stats_of(frame, "outputs")
            out.append(
                "| "
                + " | ".join(
                    [
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
                )
                + " |"
            )

    if report.history:
        out += ["", "## History", ""]
        if report.history_note:
            out += [_cell(report.history_note.message), ""]
        out += [
            "| step | loss | grad norm | max abs act | lr | loss scale |",
            "|---|---|---|---|---|---|",
        ]
        for rec in report.history[-20:]:
            out.append(
                f"| {rec.step} | {num(rec.loss)} | {num(rec.grad_norm)} | "
                f"{num(rec.max_activation)} | {num(rec.lr)} | {num(rec.loss_scale)} |"
            )

    c = report.config
    clip = f"{c.grad_clip.kind}, max {num(c.grad_clip.max)}" if c.grad_clip else "none"
    out += [
        "",
        "## Config",
        "",
        f"- precision: `{_cell(c.precision)}`",
        f"- optimizer: `{_cell(str(c.optimizer))}`",
        f"- lr: {num(c.lr, 3)}",
        f"- gradient clipping: {clip}",
        f"- GradScaler: {'yes' if c.grad_scaler else 'no'}",
    ]

    if report.matches:
        out += ["", "## Related error records", ""]
        out += [
            f"- `{_cell(m.slug)}` ({m.score:.2f}){' — ' + _cell(m.reason) if m.reason else ''}"
            for m in report.matches
        ]
    if event and event.traceback:
        out += ["", "## Traceback", "", *_code(event.traceback)]
    return "\n".join(out).rstrip() + "\n"
