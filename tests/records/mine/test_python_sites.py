"""Python sites: every message form a library spells becomes a pattern that finds the real
message, the one the fixture's code raises or warns when it runs."""

from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import traceback
import warnings

import pytest

from diagnose.records.mine import Options, mine
from tests.records.mine.conftest import MYLIB, SHA, records_of

CHECKS = MYLIB / "mylib" / "checks.py"
PATH = "mylib/checks.py"


def _module():
    spec = importlib.util.spec_from_file_location("mylib_checks_fixture", CHECKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MODULE = _module()
RECORDS = records_of(MYLIB, repo="me/mylib", commit=SHA, kinds=frozenset({"raise", "warn", "log"}))


def _record_in(function) -> dict:
    lines, first = inspect.getsourcelines(function)
    inside = [r for r in RECORDS if first <= r["lineNumber"] < first + len(lines)]
    assert len(inside) == 1, inside
    return inside[0]


def _raised(function, *args) -> str:
    """The exception line a user sees (``KeyError: 'x'`` quotes the message)."""
    try:
        function(*args)
    except BaseException as exc:  # whatever the fixture raises
        return traceback.format_exception_only(exc)[-1].rstrip("\n")
    raise AssertionError("did not raise")


CASES = [
    ("plain", (), "ValueError"),
    ("joined_lines", (3,), "RuntimeError"),
    ("fstring", ("encoder.0", 3), "TypeError"),
    ("fstring_int", (-12,), "ValueError"),
    ("percent", (0.5, 1e-8), "ValueError"),
    ("percent_int", (7,), "RuntimeError"),
    ("dot_format", ((2, 3), [4, 5]), "ValueError"),
    ("plus", ("adamw's",), "KeyError"),
    ("local_message", ("float16",), "RuntimeError"),
    ("dotted_class", (1 << 30,), "errors.DeviceMemoryError"),
    ("asserted", (-1,), "AssertionError"),
]


@pytest.mark.parametrize(("name", "args", "error_class"), CASES, ids=[c[0] for c in CASES])
def test_the_pattern_finds_the_message_the_code_raises(name, args, error_class):
    function = getattr(MODULE, name)
    record = _record_in(function)
    seen = _raised(function, *args)
    assert re.search(record["messagePattern"], seen), (record["messagePattern"], seen)
    assert record["errorClass"] == error_class
    assert record["errorType"] == "exception" and record["severity"] == "error"


def test_each_form_reads_its_literal_text_and_holes():
    patterns = {name: _record_in(getattr(MODULE, name))["messagePattern"] for name, *_ in CASES}
    assert patterns["plain"] == "Expected a non-empty batch, got nothing"
    assert patterns["joined_lines"] == (
        "Gradient accumulation needs an integer number of steps per optimizer update; "
        "see the training guide for how the effective batch size is computed\\."
    )
    assert patterns["fstring"] == "Module .*? expects a .*?-D input, got .*?-D instead"
    assert patterns["fstring_int"] == r"warmup_steps must be below total steps, got -?\d+ steps"
    assert patterns["percent"] == r"Invalid learning rate: .*? \(eps=.*?\); it must be positive"
    assert patterns["percent_int"] == r"Rank -?\d+ did not join the process group in time"
    assert patterns["dot_format"] == "Shapes .*? and .*? are not broadcastable for"
    assert patterns["plus"] == r"Unknown optimizer \\?'.*?\\?' in the config"
    assert patterns["local_message"] == "Mixed precision with .*? needs a GradScaler"


def test_warnings_carry_their_category_and_match_the_warning_text():
    for name, args, category in [
        ("deprecated", ("fit_loop",), "FutureWarning"),
        ("warned_default", (), "UserWarning"),
    ]:
        function = getattr(MODULE, name)
        record = _record_in(function)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            function(*args)
        shown = warnings.formatwarning(caught[0].message, caught[0].category, "f.py", 1)
        assert re.search(record["messagePattern"], shown)
        assert record["errorClass"] == category
        assert (record["errorType"], record["severity"]) == ("warning", "warning")


def test_logging_calls_are_sites_only_when_asked_for(caplog):
    record = _record_in(MODULE.logged)
    with caplog.at_level(logging.WARNING):
        MODULE.logged(12, float("nan"))
    assert re.search(record["messagePattern"], caplog.records[0].getMessage())
    assert (record["errorType"], record["errorClass"]) == ("log", None)
    default = mine(str(MYLIB), Options())
    assert "log" not in default.sites


def test_sites_that_spell_no_message_are_counted_not_written():
    result = mine(str(MYLIB), Options())
    lines = {w["record"]["lineNumber"] for w in result.wrappers}
    for name in ("reassigned", "factory"):
        source, first = inspect.getsourcelines(getattr(MODULE, name))
        assert not lines & set(range(first, first + len(source))), name
    # reassigned: msg has two values; factory: raises what a function returns; bare raise
    # re-raises: not a site at all
    assert result.without_message == 2
