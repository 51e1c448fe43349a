"""The rule engine: facts and symptoms -> rules (data, in ``rules/``) -> ranked fixes.

    report = analyze(report, extra_rules=[Path("my_rules")])
    rules, problems = load_rules(*paths)

``analyze`` never raises on odd evidence: what cannot be computed becomes a warning in the
report, and a broken rule file is skipped (and named in the warnings).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from diagnose.engine.cases import CaseFailure, run_cases
from diagnose.engine.conditions import OPERATORS, evaluate
from diagnose.engine.contradictions import set_aside
from diagnose.engine.loader import FixInfo, LoadProblem, Rule, load_fixes, load_rules, rule_schema
from diagnose.engine.ranking import combine, rank, rule_confidence
from diagnose.facts import detect_symptoms, extract_facts
from diagnose.learning.findings import is_broken
from diagnose.report import Report

__all__ = [
    "OPERATORS",
    "CaseFailure",
    "FixInfo",
    "LoadProblem",
    "Rule",
    "analyze",
    "combine",
    "evaluate",
    "load_fixes",
    "load_rules",
    "rank",
    "rule_confidence",
    "rule_schema",
    "run_cases",
]


def analyze(report: Report, extra_rules: Iterable[str | Path] = ()) -> Report:
    """A copy of the report with ``facts``, ``symptoms`` and ``fixes`` (best first) filled.

    A clean run gets facts but no symptoms and no fixes; an exception gets fixes only where a
    rule reads the ``script-exception`` symptom (or autograd's anomaly error names the op).
    """
    extra = list(extra_rules)
    warnings: list[str] = []
    facts, fact_warnings = extract_facts(report)
    symptoms, symptom_warnings = detect_symptoms(facts, report)
    warnings += fact_warnings + symptom_warnings
    for symptom in symptoms:
        facts[f"symptom.{symptom.id}"] = symptom.confidence
    rules, problems = load_rules(*extra)
    catalogue, _ = load_fixes(*extra)
    warnings += [f"rules: {problem}" for problem in problems]
    symptoms, aside = set_aside(rules, facts, symptoms)
    timeouts: list[str] = []
    # A run that saw nothing wrong before it ended (or was stopped) has nothing to fix.
    # A finite run's symptoms are about not learning: ranked, and the run broken when sure.
    quiet = (report.status == "clean" and not symptoms) or (
        report.status == "interrupted" and report.event is None
    )
    fixes = [] if quiet else rank(rules, facts, symptoms, catalogue, timeouts)
    warnings += [f"rules: {line}" for line in timeouts]
    status = report.status
    if status == "clean" and (is_broken(symptoms) or _diverged_surely(facts, symptoms)):
        status = "silent"
    return report.model_copy(
        update={
            "status": status,
            "facts": facts,
            "symptoms": symptoms,
            "set_aside": aside,
            "fixes": fixes,
            "warnings": [*report.warnings, *warnings],
        }
    )


def _diverged_surely(facts: dict, symptoms: list) -> bool:
    """A finite run whose loss grew many times over, with a cause found surely: it is as
    broken as one that learns nothing."""
    from diagnose.facts.symptoms.detect import diverged_finite
    from diagnose.learning.findings import BROKEN

    return diverged_finite(facts) and any(s.confidence >= BROKEN for s in symptoms)
