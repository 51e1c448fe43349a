"""The closed set of condition operators and the evaluation of ``all`` / ``any`` / ``not`` trees.

Semantics chosen so that a rule never fires by accident on missing evidence: every comparison
with a fact that is absent (or null) is false, ``ne`` and ``not_in`` included; test for absence
with ``missing``. Booleans are not numbers here (``true`` never equals ``1``), and a comparison
between a number and a string is false rather than an error.

``matches`` runs the rule's regular expression under a time bound (see
:mod:`diagnose.regexbound`): a search that runs past it counts as no match, and
:func:`evaluate` names the fact in its ``timeouts`` list so the caller can report it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from operator import ge, gt, le, lt
from typing import Any

from diagnose.regexbound import PatternTimeout, compile_bounded, search

OPERATORS: dict[str, str] = {
    "eq": "the fact equals the value",
    "ne": "the fact exists and differs from the value",
    "gt": "the fact is a number greater than the value",
    "ge": "the fact is a number greater than or equal to the value",
    "lt": "the fact is a number less than the value",
    "le": "the fact is a number less than or equal to the value",
    "in": "the fact equals one of the values in the list",
    "not_in": "the fact exists and equals none of the values in the list",
    "exists": "the fact is present and not null (takes no value)",
    "missing": "the fact is absent or null (takes no value)",
    "contains": "the fact is a string containing the value, or a list holding it",
    "matches": "the fact is a string in which the regular expression (Python syntax) is found",
    "between": "the fact is a number within [low, high], both ends included",
}

Node = dict[str, Any]


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return float(a) == float(b)
    return type(a) is type(b) and a == b


def _between(fact: Any, value: Any) -> bool:
    low, high = value
    return low <= fact <= high


def _contains(fact: Any, value: Any) -> bool:
    if isinstance(fact, str):
        return isinstance(value, str) and value in fact
    if isinstance(fact, list):
        return any(_same(item, value) for item in fact)
    return False


def _matches(fact: Any, value: Any) -> bool:
    """Raises PatternTimeout past the time bound."""
    return isinstance(fact, str) and search(compile_bounded(value), fact) is not None


def _numeric(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """An order test, false for a fact that is not a number (a string, a boolean)."""
    return lambda fact, value: _is_number(fact) and test(fact, value)


# operator -> its test of a present fact against the rule's value
_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _same,
    "ne": lambda fact, value: not _same(fact, value),
    "in": lambda fact, value: any(_same(fact, v) for v in value),
    "not_in": lambda fact, value: not any(_same(fact, v) for v in value),
    "gt": _numeric(gt),
    "ge": _numeric(ge),
    "lt": _numeric(lt),
    "le": _numeric(le),
    "between": _numeric(_between),
    "contains": _contains,
    "matches": _matches,
}


def compare(fact: Any, operator: str, value: Any) -> bool:
    """One ``{fact, operator, value}`` test against the fact's value (None: absent)."""
    if operator == "exists":
        return fact is not None
    if operator == "missing":
        return fact is None
    if fact is None:
        return False
    test = _TESTS.get(operator)
    if test is None:
        raise ValueError(f"unknown operator {operator!r}")
    return test(fact, value)


def evaluate(node: Node | None, facts: dict[str, Any], timeouts: list[str] | None = None) -> bool:
    """True when the condition tree holds over the facts (no conditions: always true).

    A ``matches`` test that runs past its time bound is false; its fact is appended to
    ``timeouts`` when a list is given.
    """
    if node is None:
        return True
    if "all" in node:
        return all(evaluate(child, facts, timeouts) for child in node["all"])
    if "any" in node:
        return any(evaluate(child, facts, timeouts) for child in node["any"])
    if "not" in node:
        return not evaluate(node["not"], facts, timeouts)
    try:
        return compare(facts.get(node["fact"]), node["operator"], node.get("value"))
    except PatternTimeout:
        if timeouts is not None:
            timeouts.append(node["fact"])
        return False


def walk_tests(node: Node | None) -> list[Node]:
    """Every ``{fact, operator, value}`` leaf of a condition tree."""
    if node is None:
        return []
    if "all" in node or "any" in node:
        return [
            leaf for child in node.get("all", node.get("any", [])) for leaf in walk_tests(child)
        ]
    if "not" in node:
        return walk_tests(node["not"])
    return [node]


def describe(node: Node | None, indent: int = 0) -> list[str]:
    """The condition tree as indented plain-text lines (for docs and `rules list`)."""
    pad = "  " * indent
    if node is None:
        return [f"{pad}- (always)"]
    for key in ("all", "any"):
        if key in node:
            head = "all of" if key == "all" else "any of"
            return [f"{pad}- {head}:", *[ln for c in node[key] for ln in describe(c, indent + 1)]]
    if "not" in node:
        return [f"{pad}- not:", *describe(node["not"], indent + 1)]
    value = "" if node["operator"] in ("exists", "missing") else f" {_show(node.get('value'))}"
    return [f"{pad}- `{node['fact']}` {node['operator']}{value}"]


def _show(value: Any) -> str:
    return json.dumps(value)
