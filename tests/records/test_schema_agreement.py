"""The JSON Schema, the pydantic models and the loader's rules agree on every record.

Hypothesis mutates the upstream sample field by field (remove a field, add one, put in a value
of another type, a near-miss string for a patterned field, ...) and checks that the models
accept a record exactly when jsonschema finds no error and the loader-only rules hold.
"""

from __future__ import annotations

import re
import string
import warnings
from typing import Annotated

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter, ValidationError

from diagnose.records.models import ErrorRecord, Item
from diagnose.records.patterns import SAFE_SUBSET_RUST, is_safe_subset, pattern_error
from diagnose.records.rules import rule_errors
from diagnose.records.schema import load_schema, schema_errors, validator
from tests.records.factory import record, seed_wrapper

FIELDS = list(ErrorRecord.model_fields)
ITEM = TypeAdapter(Item)

tricky_strings = st.sampled_from(
    [
        "",
        " ",
        "a",
        "abc\n",
        "1e92004800b7520d",
        "1E92004800B7520D",
        "1e92004800b7520d\n",
        "kebab-case",
        "Not-Kebab",
        "kebab--double",
        "-lead",
        "owner/name",
        "owner/na/me",
        "ValueError",
        "torch.cuda.OutOfMemoryError",
        "9Bad",
        "try-catch",
        "a597f974857b3d92939971296bc0deb93d33d780",
        "a597f974857b3d92939971296bc0deb93d33d78",
        "2026-08-14T18:24:08.354Z",
        "2026-08-14T18:24:08+02:00",
        "2026-13-14T18:24:08Z",
        "2026-08-14 18:24:08Z",
        "https://github.com/o/r/blob/x/y.py#L1",
        "http://github.com/o/r/x",
        "error",
        "warning",
        "fatal",
        "debug",
        "exception",
        "log_line",
        "(unclosed",
        "a)b",
        "[z-a]",
        "x{2,1}",
        "a**",
        r"\d+ (?:x|y)",
        "é",
        "tab\there",
    ]
)
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 700),
    st.floats(allow_nan=False, width=32),
    st.sampled_from([1.0, 2.0, 264.0, 282.5, 300.0, 2]),
    tricky_strings,
    st.text(string.printable, max_size=12),
    st.lists(st.one_of(tricky_strings, st.integers(0, 3)), max_size=3),
    st.dictionaries(st.sampled_from(["a", "id"]), st.integers(0, 2), max_size=1),
)
mutation = st.tuples(
    st.sampled_from([*FIELDS, "unknownField"]), st.one_of(st.just("DELETE"), values)
)


def models_accept(item) -> bool:
    try:
        ITEM.validate_python(item)
    except ValidationError:
        return False
    return True


def schema_and_rules_accept(item) -> bool:
    if schema_errors(item):
        return False
    inner = item.get("record", item)
    return not rule_errors(inner)


def mutate(rec: dict, changes: list[tuple[str, object]]) -> dict:
    for name, value in changes:
        if value == "DELETE":
            rec.pop(name, None)
        else:
            rec[name] = value
    return rec


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(mutation, min_size=0, max_size=3), wrapped=st.booleans())
def test_schema_and_models_agree(changes, wrapped):
    rec = mutate(record(1), changes)
    item = {"record": rec, "datasetVersion": None} if wrapped else rec
    assert models_accept(item) == schema_and_rules_accept(item), (changes, schema_errors(item))


@settings(max_examples=100, deadline=None)
@given(version=st.one_of(values, st.just("DELETE")), extra=st.booleans())
def test_wrapper_agreement(version, extra):
    item = seed_wrapper()
    mutate(item, [("datasetVersion", version)])
    if extra:
        item["other"] = 1
    assert models_accept(item) == schema_and_rules_accept(item)


def test_the_seed_validates_against_the_schema_file():
    assert schema_errors(seed_wrapper()) == []
    assert schema_errors(seed_wrapper()["record"]) == []
    assert list(validator().iter_errors(seed_wrapper())) == []


def test_schema_is_draft_2020_12_and_documents_the_loader_rules():
    schema = load_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "messagePattern" in schema["$comment"] and "sourceCodeStart" in schema["$comment"]
    assert set(schema["$defs"]["errorRecord"]["properties"]) == set(FIELDS)
    assert schema["$defs"]["errorRecord"]["properties"]["schemaVersion"] == {
        "const": 2,
        "description": "Format version of the record: always 2.",
    }


def test_trailing_newline_does_not_pass_an_anchored_pattern():
    rec = record(1, id="1e92004800b7520d\n")
    assert [p for p, _ in schema_errors(rec)] == ["$.id"]
    assert not models_accept(rec)


regex_chars = st.text(alphabet="ab.^$*+?{}[]()|\\-:,0129dswbBZAn^ ", max_size=14)


@settings(max_examples=2000, deadline=None)
@given(pattern=regex_chars)
def test_the_fast_regex_check_never_accepts_what_re_rejects(pattern):
    if is_safe_subset(pattern):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # not even a FutureWarning
            re.compile(pattern)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("a)b", "unbalanced parenthesis at position 1"),
        ("(a", "missing ), unterminated subpattern at position 0"),
        ("[z-a]", "bad character range z-a at position 1"),
        ("a**", "multiple repeat at position 2"),
    ],
)
def test_pattern_errors_are_re_s_own_words(pattern, reason):
    assert pattern_error(pattern) == reason


SAFE_IN_RUST = TypeAdapter(Annotated[str, Field(pattern=SAFE_SUBSET_RUST)])


def rust_accepts(pattern: str) -> bool:
    try:
        SAFE_IN_RUST.validate_python(pattern)
    except ValidationError:
        return False
    return True


@settings(max_examples=2000, deadline=None)
@given(pattern=regex_chars)
def test_the_models_rust_recogniser_is_the_same_as_pythons(pattern):
    """The models check messagePattern with pydantic's Rust engine first: it must accept
    exactly what the Python recogniser accepts (which only ever accepts what compiles)."""
    assert rust_accepts(pattern) == is_safe_subset(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"Function '(\w+)Backward\d*' returned nan values in its \d+th output\.",
        r"CUDA out of memory\. Tried to allocate [\d.]+ (?:MiB|GiB)",
        r"a{2,}",
        "(?:a|(b|c)+)?$",
    ],
)
def test_real_patterns_are_in_the_fast_subset(pattern):
    assert rust_accepts(pattern) and is_safe_subset(pattern)
