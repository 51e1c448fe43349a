"""The pattern index finds exactly the patterns a plain loop of ``re.search`` finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnose.matching.patterns import _NON_WORD, PatternIndex, _inner_words

PATTERNS = [
    r"CUDA out of memory\. Tried to allocate [\d.]+ [KMGT]iB",
    r"Tried to allocate \d+",  # shares words with the one above
    r"mat1 and mat2 shapes cannot be multiplied \(\d+x\d+ and \d+x\d+\)",
    r"(?i)loss is nan",  # case-insensitive
    r"\d+xyz\d+",  # literal without a whole word inside: the automaton path
    r"overflow",  # a literal that is one word, touching the ends of the literal
    r"[a-z]+\d",  # no literal at all: tried on every line
    None,
]
LINES = [
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)",
    "mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)",
    "ValueError: Loss is NaN at step 7",
    "id 12xyz34 failed",
    "gradient OVERFLOW detected; stackoverflow",
    "nothing to see",
    "Tried to allocate 20 MiB",
]


def test_hits_equal_the_naive_loop_on_every_line():
    index = PatternIndex(PATTERNS)
    compiled = [re.compile(p) if p else None for p in PATTERNS]
    for line in LINES:
        naive = {i for i, c in enumerate(compiled) if c is not None and c.search(line)}
        assert {h.index for h in index.search([line])} == naive, line


def test_patterns_are_only_run_where_their_literal_occurs():
    index = PatternIndex(PATTERNS)
    assert index.candidates("nothing to see") == {6}
    assert index.candidates("Tried to allocate 3 bytes") == {1, 6}


def test_an_alternation_of_wordings_is_a_candidate_only_where_one_wording_occurs():
    wordings = [
        r"CUDA out of memory\. Tried to allocate \d+|CUDA error: out of memory",
        r"Watchdog caught collective operation timeout|NCCL watchdog thread terminated",
    ]
    index = PatternIndex(wordings)
    assert index.always == []  # not tried on every line of every query
    assert index.candidates("RuntimeError: CUDA error: out of memory") == {0}
    assert index.candidates("[Rank 0] NCCL watchdog thread terminated with exception") == {1}
    assert index.candidates("RuntimeError: CUDA error: an illegal memory access") == set()
    lines = [
        "RuntimeError: CUDA error: out of memory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20",
        "nothing to see",
    ]
    compiled = [re.compile(p) for p in wordings]
    for line in lines:
        naive = {i for i, c in enumerate(compiled) if c.search(line)}
        assert {h.index for h in index.search([line])} == naive, line


def _inner_words_reference(literals: list[str]) -> list[list[str]]:
    return [_NON_WORD.split(literal)[1:-1] for literal in literals]


def _nonempty(words_of: list[list[str]]) -> list[list[str]]:
    """The words that key a literal ("" never does: it is only two adjacent non-word chars)."""
    return [[word for word in words if word] for words in words_of]


def test_inner_words_are_the_regex_split_of_each_literal():
    literals = [
        "cuda out of memory. tried to allocate ",
        "overflow",  # no inner word
        " a  b-c_d ",  # "" between two adjacent non-word characters
        "x.y",
        "(",
        "",
        "tab\tand\nnewline here",
    ]
    assert _nonempty(_inner_words(literals)) == _inner_words_reference(literals)
    # non-ASCII, and a literal holding the joiner: each read by the regex
    for odd in (["caf\u00e9 au lait ", "plain text here"], ["nul\x00inside it", "more words"]):
        assert _nonempty(_inner_words(odd)) == _inner_words_reference(odd)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab_1 .-(\t\x00\u00e9\u2014", max_size=12), max_size=6))
def test_inner_words_agree_with_the_regex_on_generated_literals(literals):
    assert _nonempty(_inner_words(literals)) == _inner_words_reference(literals)


def test_each_literal_is_keyed_by_its_rarest_inner_word():
    index = PatternIndex([r"common rare1 common \d+", r"common rare2 common \d+", r"x common y"])
    assert set(index._by_word) == {"rare1", "rare2", "common"}
    assert index._automaton.get("x common y", None) is None


def test_literals_read_before_give_the_same_candidates_as_reading_them_again():
    from diagnose.matching.literals import required_literals

    patterns = [r"CUDA out of memory\. Tried to allocate \d+", None, r"(?:old|new) wording here"]
    known = [required_literals(p) if p else None for p in patterns]
    text = "RuntimeError: CUDA out of memory. Tried to allocate 20 MiB; new wording here"
    assert PatternIndex(patterns, known).candidates(text) == PatternIndex(patterns).candidates(text)
    assert PatternIndex(patterns, known).candidates(text) == {0, 2}
    with pytest.raises(ValueError, match="2 literal entries for 3 patterns"):
        PatternIndex(patterns, known[:2])
