"""Rules that fire -> fixes ranked by how well the evidence supports them.

Each firing rule gives every fix it lists a support s = weight x confidence of the symptom the
rule reads. A fix's score combines its supports with a damped noisy-OR:

    score = s_max + (1 - s_max) * DAMPING * (1 - prod(1 - s_j for the other supports))

so the strongest piece of evidence sets the floor, and further, independent rules raise the
score towards 1 without ever overtaking a fix that has one much stronger, direct piece of
evidence. Two supports of 0.5 give 0.625, above a single 0.6: several weak signals beat one.
Ties break on the strongest single support, then on the fix id (stable output).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diagnose.engine.conditions import evaluate
from diagnose.engine.contradictions import contradiction
from diagnose.engine.loader import FixInfo, Rule
from diagnose.report import Fix, Symptom

DAMPING = 0.5
MIN_SCORE = 0.05


def rule_confidence(
    rule: Rule, facts: dict[str, Any], timeouts: list[str] | None = None
) -> float | None:
    """The confidence with which a rule fires over these facts, or None when it does not.

    The facts on which a ``matches`` test ran past its time bound go to ``timeouts``.
    """
    confidence = facts.get(f"symptom.{rule.symptom}")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None
    if confidence <= 0 or confidence < rule.min_confidence:
        return None
    if not evaluate(rule.conditions, facts, timeouts):
        return None
    if contradiction(rule, facts, timeouts) is not None:
        return None
    return float(min(confidence, 1.0))


def timeout_warning(rule: Rule, facts: list[str]) -> str:
    """One line naming the rule, its file and the facts its ``matches`` ran out of time on."""
    names = ", ".join(dict.fromkeys(facts))
    return (
        f"{rule.path}: rule {rule.id}: a `matches` test ran past its time bound on {names}; "
        "counted as no match"
    )


def combine(supports: list[float]) -> float:
    """The damped noisy-OR of a fix's supports (see the module docstring)."""
    if not supports:
        return 0.0
    ordered = sorted(supports, reverse=True)
    top, rest = ordered[0], ordered[1:]
    others = 1.0
    for s in rest:
        others *= 1.0 - s
    return top + (1.0 - top) * DAMPING * (1.0 - others)


@dataclass
class _Support:
    supports: list[float] = field(default_factory=list)
    rules: list[tuple[float, str]] = field(default_factory=list)
    evidence: list[tuple[float, str]] = field(default_factory=list)


def rank(
    rules: list[Rule],
    facts: dict[str, Any],
    symptoms: list[Symptom],
    catalogue: dict[str, FixInfo],
    warnings: list[str] | None = None,
) -> list[Fix]:
    """The fixes supported by the rules that fire, best first, each with its rules and evidence.

    A rule whose regular expression ran past its time bound is named in ``warnings``.
    """
    evidence_of = {s.id: s.evidence for s in symptoms}
    by_fix: dict[str, _Support] = {}
    for rule in rules:
        timeouts: list[str] = []
        confidence = rule_confidence(rule, facts, timeouts)
        if timeouts and warnings is not None:
            warnings.append(timeout_warning(rule, timeouts))
        if confidence is None:
            continue
        for fix_id, weight in rule.fixes:
            support = weight * confidence
            entry = by_fix.setdefault(fix_id, _Support())
            entry.supports.append(support)
            entry.rules.append((support, rule.id))
            entry.evidence.extend((support, line) for line in evidence_of.get(rule.symptom, []))
    fixes: list[tuple[float, float, str, Fix]] = []
    for fix_id, entry in by_fix.items():
        info = catalogue.get(fix_id)
        score = combine(entry.supports)
        if info is None or score < MIN_SCORE:
            continue
        fix = Fix(
            id=fix_id,
            score=round(score, 3),
            title=info.title,
            why=info.why,
            example_patch=info.example_patch,
            rules=_unique(name for _, name in sorted(entry.rules, key=lambda t: -t[0])),
            evidence=_unique(line for _, line in sorted(entry.evidence, key=lambda t: -t[0])),
        )
        fixes.append((-score, -max(entry.supports), fix_id, fix))
    fixes.sort(key=lambda t: t[:3])
    return [fix for *_, fix in fixes]


def _unique(items: Any) -> list[str]:
    return list(dict.fromkeys(items))
