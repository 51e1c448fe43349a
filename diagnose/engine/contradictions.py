"""Facts that rule a symptom's story out: a rule's ``contradicted_by``.

A detector reads a few facts and tells a story (labels that do not fit their inputs, an lr too
low to move the weights); other facts of the same report can rule that story out (an lr a
thousand times below the usual explains a loss at chance; no lr can move parameters that do
not require grad). A rule declares those facts beside its conditions, each with why in words.
A rule so contradicted does not fire, so its fixes are not offered; a symptom whose every rule
is contradicted is set aside: it leaves the report's symptoms (and no longer calls the run
broken) for ``report.set_aside``, its evidence ending with why.
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.engine.conditions import evaluate
from diagnose.engine.loader import Rule
from diagnose.formatting import num
from diagnose.report import Symptom

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_.-]*)\}")


def contradiction(
    rule: Rule, facts: dict[str, Any], timeouts: list[str] | None = None
) -> str | None:
    """Why the facts rule the rule's story out (its first ``contradicted_by`` that holds, its
    ``{fact}`` placeholders filled in), or None when none holds."""
    for when, why in rule.contradicted_by:
        if evaluate(when, facts, timeouts):
            return _filled(why, facts)
    return None


def set_aside(
    rules: list[Rule], facts: dict[str, Any], symptoms: list[Symptom]
) -> tuple[list[Symptom], list[Symptom]]:
    """(kept, set aside): a symptom is set aside when rules read it and every one of them is
    contradicted; its ``symptom.<id>`` fact is removed, so no rule reads it."""
    kept: list[Symptom] = []
    aside: list[Symptom] = []
    for symptom in symptoms:
        readers = [rule for rule in rules if rule.symptom == symptom.id]
        whys = [contradiction(rule, facts) for rule in readers]
        if not readers or any(why is None for why in whys):
            kept.append(symptom)
            continue
        facts.pop(f"symptom.{symptom.id}", None)
        reasons = list(dict.fromkeys(why for why in whys if why))
        aside.append(
            symptom.model_copy(
                update={"evidence": [*symptom.evidence, *(f"ruled out: {r}" for r in reasons)]}
            )
        )
    return kept, aside


def _filled(why: str, facts: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        fact = facts.get(match.group(1))
        if isinstance(fact, int | float) and not isinstance(fact, bool):
            return num(fact)
        return match.group(0) if fact is None else str(fact)

    return _PLACEHOLDER.sub(value, why)
