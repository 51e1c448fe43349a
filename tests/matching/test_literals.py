"""A pattern's required literals: text every match contains (one per top-level branch)."""

from __future__ import annotations

import re
import re._parser as sre_parse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.matching import literals
from diagnose.matching.literals import required_literal, required_literals


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
    assert required_literal(pattern) == literal
    assert required_literals(pattern) == (literal,)


@pytest.mark.parametrize(
    "pattern",
    [r"cuda|cpu out of memory", r"(?x) spaced \s out", r"\x41BC", r"ab?", r"(?:abc)*"],
)
def test_when_in_doubt_no_literal_is_wrong(pattern):
    literal = required_literal(pattern)
    if literal is not None:
        assert literal in _required_runs(pattern)


@pytest.mark.parametrize(
    ("pattern", "literals"),
    [
        (
            r"CUDA out of memory\. Tried to allocate [\d.]+ [KMGT]iB|CUDA error: out of memory",
            ("cuda out of memory. tried to allocate ", "cuda error: out of memory"),
        ),
        (r"watchdog (?:a|b) timed out|(?:old|new) wording here", (" timed out", " wording here")),
        (r"same text|same text", ("same text",)),
        (r"a[|]b literal text", ("b literal text",)),  # a bar in a class splits nothing
        (r"escaped \| bar here", ("escaped | bar here",)),
    ],
)
def test_an_alternation_of_wordings_has_one_literal_per_branch(pattern, literals):
    assert required_literals(pattern) == literals


@pytest.mark.parametrize(
    "pattern",
    [r"long enough text|", r"long enough text|\d+", r"(?x) long | text", r"unbalanced) text|x"],
)
def test_a_branch_without_a_literal_makes_the_pattern_checked_everywhere(pattern):
    assert required_literals(pattern) is None


def test_parser_fallback_agrees_on_a_shape_the_fast_path_skips():
    assert required_literal(r"(?:a|b)\x20error text") == " error text"


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
    literal = required_literal(pattern)
    if literal is not None:
        runs = _required_runs(pattern)
        assert any(literal in run for run in runs), (pattern, literal, runs)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.lists(_ATOMS, min_size=1, max_size=9).map("".join))
def test_every_match_contains_one_of_the_literals(data, pattern):
    try:
        re.compile(pattern)
    except re.error:
        return
    literals = required_literals(pattern)
    if literals is None:
        return
    text = data.draw(st.from_regex(pattern))
    assert any(literal in text.lower() for literal in literals), (pattern, literals, text)


def _required_runs(pattern: str) -> list[str]:
    """The parser's view (the slow reference): the literal runs every match contains."""
    parsed = sre_parse.parse(pattern)
    runs: list[str] = []
    current: list[str] = []
    literals._walk(list(parsed), runs, current)
    runs.append("".join(current))
    return [r.lower() for r in runs]


def _shipped_patterns() -> list[str]:
    from diagnose.records import load_records

    return [r.messagePattern for r in load_records().records if r.messagePattern]


def test_every_shipped_literal_is_required_text_of_its_branch():
    """The fast path against the parser's reading, on every shipped ``messagePattern``."""
    for pattern in _shipped_patterns():
        literals_found = required_literals(pattern)
        if literals_found is None:
            continue
        branches = literals._scan_branches(pattern) if "|" in pattern else [pattern]
        runs = [run for branch in branches for run in _required_runs(branch)]
        for literal in literals_found:
            assert any(literal in run for run in runs), (pattern, literal, runs)


def _chopped_reference(items: list[str]) -> str | None:
    """The longest run after cutting every quantified last character (the plain loop)."""
    runs = items[::2]
    for k in range(1, len(items), 2):
        if items[k][0] in "*+?{":
            runs[k // 2] = runs[k // 2][:-1]
    return literals._finish(max(runs, key=len))


def _bars_reference(items: list[str]) -> list[list[str]]:
    """The items cut at each ``|`` separator, by a loop over the separators."""
    branches: list[list[str]] = []
    current = [items[0]]
    for k in range(1, len(items), 2):
        if items[k] == "|":
            branches.append(current)
            current = [items[k + 1]]
        else:
            current += [items[k], items[k + 1]]
    branches.append(current)
    return branches


def _check_fast_paths(pattern: str) -> None:
    items = literals._split(pattern)
    if items is None:
        return
    assert all("|" not in text for text in items[::2]), pattern  # what _split_at_bars relies on
    branches = literals._split_at_bars(items)
    assert branches == _bars_reference(items), pattern
    for branch in branches:
        assert literals._longest_run(branch) == _chopped_reference(branch), (pattern, branch)


@pytest.mark.parametrize(
    "pattern",
    [
        r"abcd+e",
        r"abcdef+ xy",  # the longest run is quantified: the long way
        r"abc{2}defgh",
        r"abc{,3}|xyz+",
        r"tail text here*",
        r"a}{2} text",  # a literal brace before a repeat
        r"x{b}+ long text",
        r"[^ ]+ words here\d+ more",
        r"same|same|other text",
        r"a\|b|c\(d\)",
    ],
)
def test_the_fast_paths_agree_with_the_plain_loops(pattern):
    _check_fast_paths(pattern)


def test_the_fast_paths_agree_on_every_shipped_pattern():
    for pattern in _shipped_patterns():
        _check_fast_paths(pattern)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ATOMS, min_size=1, max_size=9).map("".join))
def test_the_fast_paths_agree_on_generated_patterns(pattern):
    _check_fast_paths(pattern)


def test_a_pattern_holding_a_stand_in_character_is_read_by_the_parser():
    stand_in = "\ue000"  # what the split writes for an escaped "."
    pattern = f"abc{stand_in}defg\\d+"
    assert required_literals(pattern) == (f"abc{stand_in}defg",)
    assert re.search(pattern, f"xx abc{stand_in}defg7")
