"""A pattern's required literal is text every match contains; risky patterns are flagged."""

from __future__ import annotations

import re
import re._parser as sre_parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.matching import literals
from diagnose.matching.literals import analyze, required_literal


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (
            r"CUDA out of memory\. Tried to allocate [\d.]+ [KMGT]iB",
            "cuda out of memory. tried to allocate ",
        ),
        (
            r"mat1 and mat2 shapes cannot be multiplied \(\d+x\d+ and \d+x\d+\)",
            "mat1 and mat2 shapes cannot be multiplied (",
        ),
        (
            r"found at least two devices, (?:cuda|cpu)(?::\d+)? and (?:cuda|cpu)",
            "found at least two devices, ",
        ),
        (r"grakda\ bacugra\ bakka\ \d+\ bacucu", "grakda bacugra bakka "),
        (r"(?i)Loss is NaN", "loss is nan"),
        (r"abcd+e", "abc"),  # the repeated d is not part of a contiguous run
        (r"value (\d+) is out of range", " is out of range"),
    ],
)
def test_common_shapes_give_the_longest_required_run(pattern, literal):
    assert analyze(pattern).literal == literal


@pytest.mark.parametrize(
    "pattern",
    [r"cuda|cpu out of memory", r"(?x) spaced \s out", r"\x41BC", r"ab?", r"(?:abc)*"],
)
def test_when_in_doubt_no_literal_is_wrong(pattern):
    info = analyze(pattern)
    if info.literal is not None:
        assert info.literal in _required_runs(pattern)[0]


@pytest.mark.parametrize(
    ("pattern", "risky"),
    [
        (r"(a+)+$", True),
        (r"(\w+\s?)+$", True),
        (r".*foo.*bar", True),  # two unbounded dots
        (r"[^ ]+\d+\w+x", True),  # three overlapping unbounded holes
        (r"mat1 and mat2 shapes cannot be multiplied \(\d+x\d+ and \d+x\d+\)", False),
        (r"tensor a \(\d+\) must match the size of tensor b \(\d+\) at dim \d+", False),
        (r"x \d+ y [^ ]+ z .*? w", False),
    ],
)
def test_risk_counts_only_quantifiers_that_can_multiply_backtracking(pattern, risky):
    assert analyze(pattern).risky is risky


def test_parser_fallback_agrees_on_a_shape_the_fast_path_skips():
    assert analyze(r"(?:a|b)\x20error text").literal == " error text"


_ATOMS = st.sampled_from(
    [
        "abc",
        "de",
        " ",
        r"\ ",
        r"\.",
        r"\(",
        r"\)",
        r"\[",
        r"\]",
        r"\-",
        r"\\",
        r"\n",
        r"\d",
        r"\w+",
        r"\s*",
        r"\b",
        "^",
        "$",
        ".",
        ".*?",
        "x+",
        "y?",
        "z{2}",
        "q{1,}",
        r"[^ ]+",
        r"[\]x]",
        r"[(]",
        "(?:a|b)",
        "(c)",
        "(?:(?:d)e)",
        "(?i:ab)",
        "|",
        "(?=ab)",
        "(?<=ef)",
        r"\x41",
        r"\1",
        "]",
        "}",
        "{",
        "'",
        ",",
        "#",
        r"(?P<n>\d+)",
        "(((",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ATOMS, min_size=1, max_size=9).map("".join))
def test_the_literal_is_always_required_text(pattern):
    try:
        re.compile(pattern)
    except re.error:
        return
    info = analyze(pattern)
    assert required_literal(pattern) == info.literal  # the build's shortcut agrees
    if info.literal is not None:
        runs, _risky = _required_runs(pattern)
        assert any(info.literal in run for run in runs), (pattern, info.literal, runs)


def _required_runs(pattern: str) -> tuple[list[str], bool]:
    """The parser's view (the slow reference): the literal runs every match contains."""
    parsed = sre_parse.parse(pattern)
    runs: list[str] = []
    current: list[str] = []
    literals._walk(list(parsed), runs, current)
    runs.append("".join(current))
    return [r.lower() for r in runs], literals._risky_parsed(list(parsed), 0)
