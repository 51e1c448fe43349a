"""JSON from records, reports and configs: numbers of any length and any nesting become one
line (JSONLimitError, a ValueError) instead of Python's bare errors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose import jsonsafe
from diagnose.jsonsafe import MAX_INT_DIGITS, JSONLimitError
from tests.untrusted import examples

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(value=json_values)
@examples(150)
def test_json_within_the_bounds_reads_as_json_loads_reads_it(value):
    text = json.dumps(value)
    longest = max((len(str(abs(n))) for n in _ints(value)), default=0)
    if longest > MAX_INT_DIGITS:
        with pytest.raises(JSONLimitError, match="digits"):
            jsonsafe.loads(text)
    else:
        assert jsonsafe.loads(text) == json.loads(text)


def _ints(value):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _ints(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ints(item)


@given(digits=st.integers(MAX_INT_DIGITS + 1, 20_000), line=st.integers(1, 5))
@examples(30)
def test_a_long_integer_is_refused_with_its_line(digits, line):
    text = "\n" * (line - 1) + '{"a": [1, ' + "7" * digits + "]}"
    with pytest.raises(JSONLimitError) as caught:
        jsonsafe.loads(text)
    message = str(caught.value)
    assert f"{digits:,} digits at line {line}" in message and "\n" not in message


def test_nesting_past_the_recursion_limit_is_one_line():
    with pytest.raises(JSONLimitError, match="nested too deep"):
        jsonsafe.loads("[" * 100_000 + "]" * 100_000)


def test_lone_surrogates_read_back_for_the_output_funnels_to_show():
    assert jsonsafe.loads('"\\ud800"') == "\ud800"
