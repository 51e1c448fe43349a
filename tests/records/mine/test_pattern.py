"""Pieces -> messagePattern and its self-test."""

from __future__ import annotations

import re

from diagnose.records.mine.pattern import build_pattern, made_and_tested
from diagnose.records.mine.pieces import Hole, Lit


def test_literals_are_escaped_and_holes_are_lazy_wildcards_on_one_line():
    pieces = (Lit("a.b(c) ["), Hole("x"), Lit("] costs $5 * 2?"))
    pattern = build_pattern(pieces)
    assert pattern == r"a\.b\(c\) \[.*?\] costs \$5 \* 2\?"
    assert re.search(pattern, "a.b(c) [anything here] costs $5 * 2?")
    assert not re.search(pattern, "a.b(c) [two\nlines] costs $5 * 2?")


def test_holes_at_the_ends_are_dropped_and_adjacent_holes_merge():
    pieces = (Hole("name"), Lit(": expected "), Hole("a"), Hole("b"), Lit(" got "), Hole("c"))
    assert build_pattern(pieces) == ": expected .*? got"


def test_integer_holes_match_digits_only():
    pattern = build_pattern((Lit("rank "), Hole("r", "int"), Lit(" timed out")))
    assert pattern == r"rank -?\d+ timed out"
    assert not re.search(pattern, "rank zero timed out")


def test_a_multi_line_message_is_recognised_by_its_first_line_and_its_blanks_trimmed():
    pieces = (Lit("Loss scale reached its minimum.   \nTry these steps:\n1. lower the lr"),)
    assert build_pattern(pieces) == r"Loss scale reached its minimum\."


def test_a_first_line_that_is_only_a_hole_gives_way_to_the_line_with_the_text():
    pieces = (Hole("header"), Lit("\nCUDA error: an illegal memory access was encountered"))
    assert build_pattern(pieces) == "CUDA error: an illegal memory access was encountered"


def test_repr_renderings_allow_the_quote_escapes_the_value_decides():
    tested = made_and_tested((Lit("no key '"), Hole("k"), Lit("' in the state dict")), "repr")
    assert tested.failure is None
    for value in ("x", "it's", 'say "hi"', "both ' and \""):
        assert re.search(
            tested.pattern, repr(KeyError(f"no key '{value}' in the state dict"))[9:-1]
        )


def test_the_self_test_refuses_patterns_that_cannot_tell_a_message_apart():
    assert made_and_tested((Hole("a"), Lit(" != "), Hole("b"))).failure == (
        "too little literal text to tell the message apart"
    )
    assert made_and_tested(()).failure is not None


def test_the_sample_message_shows_each_hole_and_is_matched():
    tested = made_and_tested(
        (Lit("Expected "), Hole("x.dim()"), Lit("-D input, got "), Hole("n", "int"), Lit(" dims"))
    )
    assert tested.message == "Expected <x.dim()>-D input, got 0 dims"
    assert tested.failure is None and re.search(tested.pattern, tested.message)
