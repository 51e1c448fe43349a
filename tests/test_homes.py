"""One home per symptom and per fix: the registries, the rule files and the docs agree.

A symptom is one ``@symptom`` declaration (id, title, related tags) beside its detector, plus
its rule files under ``rules/<family>/``; a fix is its ``rules/_fixes.yaml`` entry plus a
``@patcher`` (or a ``no_patch`` reason). ``home_problems`` lists every piece that is missing;
the tests below show it on the shipped registries and on copies with one piece left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from diagnose.engine import FixInfo, Rule, load_fixes, load_rules
from diagnose.engine.docs import render
from diagnose.facts.symptoms import REGISTRY, SymptomRegistry, SymptomSpec
from diagnose.patches import PATCHERS

RULES, RULE_PROBLEMS = load_rules()
FIXES, FIX_PROBLEMS = load_fixes()
PAGE = render()


def _symptom_problems(registry: SymptomRegistry, rules: list[Rule], page: str) -> list[str]:
    problems: list[str] = []
    for spec in registry:
        own = [r for r in rules if r.symptom == spec.id]
        if not spec.title:
            problems.append(f"symptom {spec.id} has no title")
        if f"| `{spec.id}` | {spec.title} |" not in page:
            problems.append(f"symptom {spec.id} is not in docs/rules.md with its title")
        if not spec.rules:
            if not spec.reason:
                problems.append(f"symptom {spec.id} has no rule and does not say why")
            continue
        if not own:
            problems.append(f"symptom {spec.id} has no rule in rules/{spec.family}/")
        for rule in own:
            if rule.family != spec.family:
                problems.append(
                    f"rule {rule.id} is in {rule.family}/, its symptom in {spec.family}"
                )
            fires = [c for c in rule.match_cases if f"symptom.{spec.id}" in c]
            if not fires or not rule.no_match_cases:
                problems.append(f"rule {rule.id} lacks a match case with its symptom or a no_match")
    return problems


def _fix_problems(
    rules: list[Rule], fixes: Mapping[str, FixInfo], patchers: Mapping[str, object]
) -> list[str]:
    problems: list[str] = []
    used = {fix_id for rule in rules for fix_id, _ in rule.fixes}
    for fix_id in sorted(used):
        fix = fixes.get(fix_id)
        if fix is None:
            problems.append(f"a rule names the unknown fix {fix_id}")
        elif fix_id not in patchers and not fix.no_patch:
            problems.append(f"fix {fix_id} has no patcher and no no_patch reason")
        elif fix_id in patchers and fix.no_patch:
            problems.append(f"fix {fix_id} has a patcher but says no_patch")
    problems += [
        f"patcher {fix_id} has no fix in _fixes.yaml" for fix_id in patchers if fix_id not in fixes
    ]
    return problems


def home_problems(
    registry: SymptomRegistry,
    rules: list[Rule],
    fixes: Mapping[str, FixInfo],
    patchers: Mapping[str, object],
    page: str,
) -> list[str]:
    """Every missing piece of a symptom's or a fix's home, in words."""
    unknown = [
        f"rule {r.id} names the unknown symptom {r.symptom}"
        for r in rules
        if r.symptom not in registry
    ]
    return (
        unknown + _symptom_problems(registry, rules, page) + _fix_problems(rules, fixes, patchers)
    )


def test_the_shipped_symptoms_and_fixes_each_have_their_whole_home():
    assert RULE_PROBLEMS == [] and FIX_PROBLEMS == []
    assert home_problems(REGISTRY, RULES, FIXES, PATCHERS, PAGE) == []


def test_every_family_of_rules_has_its_symptom_module():
    assert {r.family for r in RULES} <= {s.family for s in REGISTRY}


def test_a_symptom_left_out_of_the_registry_leaves_its_rules_naming_an_unknown_symptom():
    problems = home_problems(REGISTRY.without("lr-too-high"), RULES, FIXES, PATCHERS, PAGE)
    assert "rule lr-too-high names the unknown symptom lr-too-high" in problems


def test_a_symptom_without_a_rule_is_named():
    spec = SymptomSpec(id="made-up", title="a made-up symptom", detector=len, family="data")
    registry = REGISTRY.replaced(spec)
    problems = home_problems(registry, RULES, FIXES, PATCHERS, PAGE)
    assert "symptom made-up has no rule in rules/data/" in problems
    assert "symptom made-up is not in docs/rules.md with its title" in problems


def test_a_symptom_without_a_title_or_with_a_stale_docs_entry_is_named():
    spec = dataclasses.replace(REGISTRY.get("exp-overflow"), title="")
    problems = home_problems(REGISTRY.replaced(spec), RULES, FIXES, PATCHERS, PAGE)
    assert "symptom exp-overflow has no title" in problems
    assert "symptom exp-overflow is not in docs/rules.md with its title" in problems


def test_a_rule_less_symptom_must_say_why():
    spec = dataclasses.replace(REGISTRY.get("script-exception"), reason="")
    problems = home_problems(REGISTRY.replaced(spec), RULES, FIXES, PATCHERS, PAGE)
    assert problems == ["symptom script-exception has no rule and does not say why"]


def test_a_rule_without_its_cases_is_named():
    rules = [
        dataclasses.replace(r, no_match_cases=()) if r.id == "log-of-zero" else r for r in RULES
    ]
    problems = home_problems(REGISTRY, rules, FIXES, PATCHERS, PAGE)
    assert problems == ["rule log-of-zero lacks a match case with its symptom or a no_match"]


def test_a_fix_left_out_of_the_patchers_must_say_why_it_has_no_patch():
    patchers = {k: v for k, v in PATCHERS.items() if k != "use-bf16"}
    problems = home_problems(REGISTRY, RULES, FIXES, patchers, PAGE)
    assert problems == ["fix use-bf16 has no patcher and no no_patch reason"]
    fixes = {**FIXES, "guard-pow": dataclasses.replace(FIXES["guard-pow"], no_patch=None)}
    problems = home_problems(REGISTRY, RULES, fixes, PATCHERS, PAGE)
    assert problems == ["fix guard-pow has no patcher and no no_patch reason"]


def test_a_fix_left_out_of_the_catalogue_is_named_for_its_rules_and_its_patcher():
    fixes = {k: v for k, v in FIXES.items() if k != "stabilize-log"}
    problems = home_problems(REGISTRY, RULES, fixes, PATCHERS, PAGE)
    assert "a rule names the unknown fix stabilize-log" in problems
    assert "patcher stabilize-log has no fix in _fixes.yaml" in problems


@pytest.mark.parametrize("spec", list(REGISTRY), ids=lambda s: s.id)
def test_each_symptom_is_declared_in_the_module_of_its_family(spec):
    assert spec.detector.__module__ == f"diagnose.facts.symptoms.{spec.family}"
