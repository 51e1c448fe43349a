"""Symptoms of a mask: softmax over a row that is -inf everywhere is 0/0 = nan.

A -inf mask is harmless while every row keeps a finite entry (exp(-inf) = 0); a sequence that
is all padding, or a query allowed to attend to nothing, leaves a row with none.
"""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.evidence import op_line
from diagnose.facts.symptoms.registry import symptom
from diagnose.formatting import num
from diagnose.report import Report, Symptom


@symptom(
    "fully-masked-row",
    title="softmax over a fully masked row",
    related_tags=["attention", "nan"],
)
def fully_masked_row(f: Facts, report: Report) -> Symptom | None:
    count = f.get("mask.rows_all_inf")
    if not count:
        return None
    line = f.get("mask.softmax_line")
    where = f" on line {line}" if line else ""
    what = (
        f"{f.get('mask.softmax_op')}{where} received {num(count)} of "
        f"{num(f.get('mask.rows_total'))} rows that are -inf everywhere (the first at index "
        f"{f.get('mask.first_row')}, batch first): their softmax is 0/0 = nan"
    )
    # A -inf given on purpose (float("-inf") as the fill value) is the mask itself; a -inf
    # that a finite constant overflowed into is the constant's doing (number-beyond-dtype).
    if f.get("op_input.infinite_number"):
        confidence = 0.95
    elif f.get("op_input.number_beyond_dtype") is not None:
        confidence = 0.6
    else:
        confidence = 0.85
    return Symptom(id="fully-masked-row", confidence=confidence, evidence=[op_line(f, what)])
