"""Symptoms of the data: non-finite values the batch brought, a loss averaged over no targets."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.evidence import op_line, value_of
from diagnose.facts.symptoms.registry import symptom
from diagnose.report import Report, Symptom


@symptom(
    "nonfinite-targets", title="non-finite values in the targets", related_tags=["labels", "nan"]
)
@symptom(
    "nonfinite-input",
    title="non-finite values in the input batch",
    related_tags=["dataloader", "nan", "numerical-stability"],
)
def nonfinite_batch(f: Facts, report: Report) -> Symptom | None:
    if f.get("batch_cast.dtype"):
        return None  # finite as the loader gave it: a cast made it inf (batch-cast-overflow)
    given_bad = f.get("op_input.nonfinite") or f.get("producer_frame.input_nonfinite")
    if f.get("event.phase") == "loss" and given_bad:
        # The model's outputs were finite (else the event would be in forward), so the
        # non-finite input of the loss op is what the batch brought: the targets.
        return Symptom(
            id="nonfinite-targets",
            confidence=0.8,
            evidence=[
                f"an input of the loss {f.get('event.op') or ''} was already non-finite "
                "while the model's outputs were finite: the targets hold nan/inf".replace("  ", " ")
            ],
        )
    if f.get("event.phase") != "input":
        return None
    targets = f.get("event.input_role") == "targets"
    what = "targets" if targets else "input batch"
    count = f.get("event.sample_count")
    samples = ""
    if count and report.event and report.event.sample_indices:
        shown = ", ".join(str(i) for i in report.event.sample_indices[:5])
        samples = f" (dataset samples {shown}{', ...' if count > 5 else ''})"
    at = f" at step {f['event.step']}" if isinstance(f.get("event.step"), int) else ""
    return Symptom(
        id="nonfinite-targets" if targets else "nonfinite-input",
        confidence=0.95,
        evidence=[f"{value_of(f)} in the {what}{at}{samples}, before the model saw it"],
    )


@symptom(
    "all-targets-ignored",
    title="all targets ignored (loss is a mean over nothing)",
    related_tags=["cross-entropy", "labels"],
)
def all_targets_ignored(f: Facts, report: Report) -> Symptom | None:
    if not f.get("loss.is_cross_entropy") or not f.get("event.has_nan"):
        return None
    if f.get("op_input.nonfinite") or f.get("event.phase") == "input":
        return None
    ignored = f.get("targets.all_ignored")
    ignore_index = f.get("targets.ignore_index", -100)
    if ignored is True:
        confidence = 0.95
        what = f"every target equals ignore_index={ignore_index}: the mean is 0/0"
    elif ignored is None:
        confidence = 0.7
        what = (
            "cross-entropy of finite logits is nan only as a mean over no targets "
            f"(all equal to ignore_index={ignore_index})"
        )
    else:
        return None
    return Symptom(id="all-targets-ignored", confidence=confidence, evidence=[op_line(f, what)])
