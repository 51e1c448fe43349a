"""Symptoms of a crashing script, as the live run explained it (``event.crash``, built by
``diagnose.crash`` while the exception's frames were alive).

The family comes from the exception; the evidence is what the run showed: the module and its
declared sizes, the tensors' shapes and dtypes, the lines that made them. An exception whose
cause the run did not show keeps the family at a lower confidence, with what was checked,
and its rules offer no fix: the matched records answer it.
"""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.registry import EXCEPTION, symptom
from diagnose.report import Report, Symptom
from diagnose.safetext import strip_escapes

SHOWN, MESSAGE_ONLY = 0.95, 0.6


@symptom(
    "shape-mismatch",
    title="a layer or op met a tensor of another size than it was built for",
    related_tags=["shape", "shape-mismatch", "convolution"],
    reads=(EXCEPTION,),
)
@symptom(
    "inplace-modified-saved-tensor",
    title="a tensor that backward needs was modified in place",
    related_tags=["autograd", "inplace"],
    reads=(EXCEPTION,),
)
@symptom(
    "backward-through-graph-twice",
    title="backward went through a graph that an earlier backward had freed",
    related_tags=["autograd", "rnn"],
    reads=(EXCEPTION,),
)
@symptom(
    "graph-cut-before-backward",
    title="the loss has no gradient: the graph was cut before it",
    related_tags=["autograd"],
    reads=(EXCEPTION,),
)
@symptom(
    "dtype-mismatch",
    title="a tensor of the wrong dtype reached a layer or a loss",
    related_tags=["dtype"],
    reads=(EXCEPTION,),
)
@symptom(
    "index-out-of-range",
    title="a class target or an index beyond the layer's size",
    related_tags=["labels", "embedding", "indexing"],
    reads=(EXCEPTION,),
)
def crash(f: Facts, report: Report) -> Symptom | None:
    family = f.get("crash.family")
    event = report.event
    found = getattr(event, "crash", None) if event is not None else None
    if not family or found is None:
        return None
    evidence = [strip_escapes(line) for line in found.evidence]
    for site in found.sites:
        code = f": {strip_escapes(site.code)}" if site.code else ""
        evidence.append(f"line {site.line}{code} ({strip_escapes(site.what or site.role)})")
    evidence += [f"checked: {strip_escapes(line)}" for line in found.checked]
    return Symptom(
        id=family,
        confidence=SHOWN if f.get("crash.explained") else MESSAGE_ONLY,
        evidence=evidence,
    )
