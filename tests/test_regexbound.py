"""Patterns from files (records' messagePattern, rules' ``matches``) are bounded when they are
compiled, not only when they run: length, nesting and unrolled size are checked before the
bounded engine (which unrolls counted repeats) ever sees them."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.records.patterns import MAX_CHARS, MAX_DEPTH, MAX_UNROLLED, pattern_error
from diagnose.regexbound import UnboundedPattern, compile_bounded, search
from tests.untrusted import examples

ATOMS = st.sampled_from(["x", "ab", r"\d", "[a-z]", ".", "(?:a|b)", r"\w+"])


def _counted(inner: str, low: int, high: int | None, kind: int) -> str:
    counts = (f"{{{low}}}", f"{{{low},}}", f"{{{low},{high or low + 1}}}")[kind]
    return f"(?:{inner}){counts}"


nested_repeats = st.recursive(
    ATOMS,
    lambda inner: (
        st.builds(
            _counted,
            inner,
            st.integers(0, 2000),
            st.one_of(st.none(), st.integers(2001, 5000)),
            st.integers(0, 2),
        )
        | st.builds(lambda a, b: f"{a}|{b}", inner, inner)
        | st.builds(lambda a: f"(?={a})", inner)
    ),
    max_leaves=6,
)


@given(pattern=nested_repeats)
@examples(150)
def test_a_pattern_either_is_refused_in_one_line_or_compiles_fast(pattern):
    reason = pattern_error(pattern)
    if reason is not None:
        assert "\n" not in reason
        with pytest.raises(UnboundedPattern):
            compile_bounded.__wrapped__(pattern)
        return
    start = time.perf_counter()
    compiled = compile_bounded.__wrapped__(pattern)
    assert time.perf_counter() - start < 2.0, pattern
    try:
        search(compiled, "x" * 200)
    except Exception as exc:  # a timeout is the match-time bound doing its job
        assert type(exc).__name__ == "PatternTimeout"


@pytest.mark.parametrize(
    "pattern",
    [
        "(?:(?:x{300}){300}){300}",  # the 24-byte probe: gigabytes unrolled
        "(?:ab|cd){60000}",
        "(?=(?:x{400}){400})",  # inside a lookahead
        "(?>(?:x{400}){400})",  # inside an atomic group
        "(?:x{350,}){350}",  # open-ended counts unroll their lower bound
        "(?:(?:(?:y{50}){50}){50})",
        "(" * (MAX_DEPTH + 2) + "x" + ")" * (MAX_DEPTH + 2),
        "a" * (MAX_CHARS + 1),
    ],
)
def test_costly_shapes_are_refused_before_compiling(pattern):
    reason = pattern_error(pattern)
    assert reason is not None and "\n" not in reason
    with pytest.raises(UnboundedPattern, match="too"):
        compile_bounded(pattern)


@pytest.mark.parametrize(
    "pattern",
    [r"expected \d+ got \d+", "x{1000}", "(?:x{100}){100}", "a{1,65535}", r"(?:\w+\.){0,50}\w+"],
)
def test_real_patterns_and_wide_ranges_still_compile(pattern):
    assert pattern_error(pattern) is None
    compile_bounded(pattern)


def test_the_limits_leave_room_for_real_patterns():
    assert MAX_UNROLLED >= 10_000 and MAX_CHARS >= 4096 and MAX_DEPTH >= 16
