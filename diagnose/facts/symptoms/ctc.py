"""Symptoms of a CTC loss: a sample whose input is too short for its target has no alignment,
so its loss is inf (and its gradient nan) however healthy the model is."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.evidence import op_line
from diagnose.facts.symptoms.registry import symptom
from diagnose.report import Report, Symptom


@symptom(
    "ctc-infeasible",
    title="a CTC target longer than its input",
    related_tags=["loss", "inf"],
)
def ctc_infeasible(f: Facts, report: Report) -> Symptom | None:
    count = f.get("ctc.infeasible_count")
    if count:
        what = (
            f"{count} sample{'s' if count != 1 else ''} cannot be aligned: sample "
            f"{f.get('ctc.sample')} has {f.get('ctc.input_length')} input frames for "
            f"{f.get('ctc.target_length')} target symbols, which need {f.get('ctc.needed')} "
            "(one per symbol and a blank between repeats)"
        )
        return Symptom(id="ctc-infeasible", confidence=0.95, evidence=[op_line(f, what)])
    if f.get("event.op_base") == "ctc_loss" and f.get("event.op_value") == "inf":
        # the lengths could not be read: an inf CTC loss from finite log-probabilities is
        # an impossible alignment all the same
        what = "a CTC loss is inf from finite log-probabilities only without an alignment"
        return Symptom(id="ctc-infeasible", confidence=0.7, evidence=[op_line(f, what)])
    return None
