"""Running the registered detectors over a report's facts."""

from __future__ import annotations

from diagnose.facts.extract import Facts
from diagnose.facts.heuristics import threshold
from diagnose.facts.symptoms.registry import (
    ANOMALY,
    DIVERGED,
    EXCEPTION,
    FINITE,
    NONFINITE,
    REGISTRY,
    Detector,
    SymptomRegistry,
)
from diagnose.report import Report, Symptom


def _detectors(facts: Facts, registry: SymptomRegistry) -> list[Detector]:
    kind = facts.get("event.kind")
    if kind == "exception":
        reads = [EXCEPTION]
        if facts.get("event.anomaly"):
            reads.append(ANOMALY)
        if diverged_then_raised(facts):
            reads.append(DIVERGED)
        return registry.detectors(*reads)
    if kind == "nonfinite":
        return registry.detectors(NONFINITE)
    if kind is None:
        reads = [FINITE, DIVERGED] if diverged_finite(facts) else [FINITE]
        return registry.detectors(*reads)
    return []


def diverged_then_raised(facts: Facts) -> bool:
    """The script raised after its loss had grown many times over the run."""
    return facts.get("event.kind") == "exception" and _loss_grew(facts)


def diverged_finite(facts: Facts) -> bool:
    """The run ended without an event, its loss many times where it started: a divergence
    that stayed finite (clipping, a loss that saturates, a run too short to overflow)."""
    return facts.get("event.kind") is None and _loss_grew(facts)


def _loss_grew(facts: Facts) -> bool:
    growth = facts.get("run.loss_growth")
    return isinstance(growth, int | float) and growth >= threshold("diverged_then_raised", 10.0)


def detect_symptoms(
    facts: Facts, report: Report, registry: SymptomRegistry = REGISTRY
) -> tuple[list[Symptom], list[str]]:
    """The symptoms of a report, most confident first, and warnings for detectors that failed.

    Symptoms describe a non-finite event (or an autograd anomaly error naming the op); a clean
    run has none, and an exception has ``script-exception`` for user rules to read, plus the
    optimisation symptoms when the loss had diverged before it.
    """
    warnings: list[str] = []
    found: list[Symptom] = []
    for detector in _detectors(facts, registry):
        try:
            symptom = detector(facts, report)
        except Exception as exc:  # odd evidence must not stop the diagnosis
            warnings.append(f"symptoms: {detector.__name__} skipped: {type(exc).__name__}: {exc}")
            continue
        if symptom is None or symptom.confidence <= 0:
            continue
        spec = registry.get(symptom.id)
        if spec is None or spec.detector is not detector:
            warnings.append(
                f"symptoms: {detector.__name__} returned {symptom.id!r}, which it does not declare"
            )
            continue
        symptom.confidence = round(symptom.confidence, 3)
        symptom.title = symptom.title or spec.title
        found.append(symptom)
    found.sort(key=lambda s: -s.confidence)
    return found, warnings
