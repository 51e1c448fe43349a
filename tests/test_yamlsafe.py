"""YAML from rule and config files: any text either reads as JSON's kinds of values or is
refused with one line -- huge integers, binary data, sets and lone surrogates included."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from diagnose import yamlsafe
from diagnose.jsonsafe import MAX_INT_DIGITS
from diagnose.yamlsafe import YAMLLimitError
from tests.untrusted import examples

HOSTILE_VALUES = (
    "9" * 5000,
    "-" + "1" * 4400,
    "0x" + "f" * 300,
    "0o" + "7" * 300,
    "1_000_" * 50 + "0",
    "!!binary aGVsbG8=",
    "!!set {a: null}",
    '"\\ud800"',
    '"a\\udfffb"',
    "2024-01-01",
    "2024-01-01 10:00:00",
    "!!timestamp 2001-12-14t21:59:43.10-05:00",
    "1e99999",
    ".nan",
    "[*a]",
    "!!omap [a: 1]",
    '"\\x1b[2J\\u202e"',
)
documents = st.lists(
    st.tuples(
        st.from_regex(r"[a-z]{1,6}", fullmatch=True),
        st.sampled_from(HOSTILE_VALUES) | st.text(max_size=8),
    ),
    min_size=1,
    max_size=4,
).map(lambda pairs: "".join(f"{k}: {v}\n" for k, v in pairs))


def _ints(value):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for item in [*value.keys(), *value.values()]:
            yield from _ints(item)
    elif isinstance(value, list):
        for item in value:
            yield from _ints(item)


@given(text=documents)
@examples(200)
def test_any_document_is_plain_json_data_or_one_line_of_refusal(text):
    try:
        data = yamlsafe.load(text)
    except (yaml.YAMLError, YAMLLimitError) as exc:
        if isinstance(exc, YAMLLimitError):
            assert "\n" not in str(exc) and "line" in str(exc)
        return
    dumped = json.dumps(data, allow_nan=True)  # no bytes, sets, dates or other objects
    dumped.encode("utf-8")  # no lone surrogate survived (json escapes them; check the data)
    json.dumps(data, ensure_ascii=False).encode("utf-8")
    assert all(len(str(abs(n))) <= MAX_INT_DIGITS for n in _ints(data))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("lr: 1" + "0" * 4999, "an integer of 5,000 digits at line 1"),
        ("a: 1\nb: 0x" + "f" * 60, "line 2"),
        ("a: !!binary aGVsbG8=", "binary data (!!binary) at line 1"),
        ("a:\n  b: !!set {x: null}", "a set (!!set; write a list) at line 2"),
        ('a: "\\ud800"', "a lone surrogate (not text) in a string at line 1"),
        ('"\\udc80": 1', "a lone surrogate"),
    ],
)
def test_each_value_json_cannot_hold_is_refused_with_its_line(text, says):
    with pytest.raises(YAMLLimitError) as caught:
        yamlsafe.load(text)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_ordinary_values_read_as_before_and_dates_stay_text():
    assert yamlsafe.load("a: 1_000\nb: -5\nc: 2024-01-01\nd: 0.5\ne: [x, 3]\n") == {
        "a": 1000,
        "b": -5,
        "c": "2024-01-01",
        "d": 0.5,
        "e": ["x", 3],
    }
    assert yamlsafe.load("n: " + "9" * MAX_INT_DIGITS)["n"] == int("9" * MAX_INT_DIGITS)
