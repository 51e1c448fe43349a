"""The script raised an exception: a symptom for user rules to read (the matcher explains it)."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.registry import EXCEPTION, symptom
from diagnose.report import Report, Symptom


@symptom(
    "script-exception",
    title="the script raised an exception",
    reads=(EXCEPTION,),
    rules=False,
    reason="no built-in fix applies to every exception: the matcher explains them, and user rules may read this symptom",
)
def script_exception(f: Facts, report: Report) -> Symptom | None:
    if f.get("event.kind") != "exception":
        return None
    kind = f.get("event.exception_type") or "an exception"
    message = str(f.get("event.message") or "").splitlines()[0:1]
    # the generic symptom yields to a run-specific explanation of the same exception
    explained = f.get("crash.family") is not None
    return Symptom(
        id="script-exception",
        confidence=0.5 if explained else 1.0,
        evidence=[f"the script raised {kind}" + (f": {message[0]}" if message else "")],
    )
