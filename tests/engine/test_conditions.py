"""The condition operators: each documented one tests a present fact; absent facts never fire."""

from __future__ import annotations

import pytest

from diagnose.engine.conditions import OPERATORS, compare

# operator -> (value, facts it holds for, facts it does not)
CASES = {
    "eq": (1.0, [1, 1.0], [2, True, "1"]),
    "ne": ("a", ["b", 1], ["a"]),
    "gt": (1, [2, 1.5], [1, True, "9"]),
    "ge": (1, [1, 2.0], [0.5, True]),
    "lt": (1, [0, 0.5], [1, False, "0"]),
    "le": (1, [1, -3], [1.5, False]),
    "in": (["a", 2], ["a", 2.0], ["b", True]),
    "not_in": (["a"], ["b", 3], ["a"]),
    "contains": ("nan", ["a nan here", ["nan"]], ["inf", ["inf"], 3]),
    "matches": (r"^fp1[6]$", ["fp16"], ["bf16", 16]),
    "between": ([1, 2], [1, 1.5, 2], [0.9, 2.1, True, "1.5"]),
    "exists": (None, [0, False, ""], []),
}


def test_every_documented_operator_has_its_cases_here():
    assert set(CASES) | {"missing"} == set(OPERATORS)


@pytest.mark.parametrize("operator", sorted(CASES))
def test_an_operator_holds_for_its_facts_and_not_for_others(operator):
    value, holds, fails = CASES[operator]
    assert all(compare(fact, operator, value) for fact in holds), operator
    assert not any(compare(fact, operator, value) for fact in fails), operator


@pytest.mark.parametrize("operator", sorted(set(OPERATORS) - {"missing"}))
def test_an_absent_fact_never_fires_an_operator_but_missing(operator):
    value = CASES[operator][0]
    assert compare(None, operator, value) is False
    assert compare(None, "missing", None) is True


def test_an_unknown_operator_is_an_error_for_a_present_fact():
    with pytest.raises(ValueError, match="unknown operator 'near'"):
        compare(1.0, "near", 1.0)
