"""Python sites: every message form a library spells becomes a pattern that finds the real
message, the one the fixture's code raises or warns when it runs."""

from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import traceback
import warnings
from pathlib import Path

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


def _installed_file(module: str) -> Path:
    """The file of an installed module: real library source, as users run it."""
    return Path(importlib.util.find_spec(module).origin)


def _mined(path, kinds=frozenset({"raise", "warn"})) -> list[dict]:
    return [w["record"] for w in mine(str(path), Options(kinds=kinds)).wrappers]


def _line_of(path, *needles: str) -> int:
    """The first line of ``path`` that opens a call holding every needle in its next lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for k, line in enumerate(lines):
        window = "\n".join(lines[k : k + 5])
        if all(n in window for n in needles) and needles[0] in line:
            return k + 1
    raise AssertionError(f"{needles} not in {path}")


def test_lightning_rank_zero_warn_is_a_warning_site_with_its_category():
    path = _installed_file("lightning.pytorch.trainer.connectors.data_connector")
    line = _line_of(path, "rank_zero_warn(", "does not have many workers")
    (record,) = [r for r in _mined(path) if r["lineNumber"] == line]
    assert record["errorClass"] == "PossibleUserWarning"
    message = (
        "The 'train_dataloader' does not have many workers which may be a bottleneck. Consider "
        "increasing the value of the `num_workers` argument` to `num_workers=7` in the "
        "`DataLoader` to improve performance."
    )
    assert re.search(record["messagePattern"], message)


def test_rank_zero_warn_reads_its_second_argument_as_the_stack_level_not_the_category(tmp_path):
    source = tmp_path / "warns.py"
    source.write_text(
        "from lightning.pytorch.utilities import rank_zero_warn\n"
        "def f():\n"
        '    rank_zero_warn("the checkpoint has no optimizer states", 5)\n'
    )
    (record,) = _mined(source)
    assert record["errorClass"] == "UserWarning"


def test_torch_assert_is_an_assertion_site_with_its_message():
    path = _installed_file("torch.fx._symbolic_trace")
    line = _line_of(path, "torch._assert(", "has been specialized to have value")
    (record,) = [r for r in _mined(path, frozenset({"raise"})) if r["lineNumber"] == line]
    assert record["errorClass"] == "AssertionError"
    message = "x has been specialized to have value 3 but got another value"
    assert re.search(record["messagePattern"], message)


def test_a_message_held_in_a_module_constant_is_read_where_it_is_raised(tmp_path):
    # the shape of transformers' modeling_utils: the text is a module constant, raised in a
    # function; the same name bound in any function stays a hole
    source = tmp_path / "consts.py"
    source.write_text(
        'NO_WEIGHTS_MSG = "no file named pytorch_model.bin found in directory"\n'
        "def load(path):\n"
        "    raise OSError(NO_WEIGHTS_MSG)\n"
        'shadowed = "module text"\n'
        "def outer():\n"
        '    shadowed = "function text"\n'
        "    def inner():\n"
        "        raise ValueError(shadowed)\n"
    )
    records = {r["lineNumber"]: r for r in _mined(source)}
    assert re.search(
        records[3]["messagePattern"], "no file named pytorch_model.bin found in directory"
    )
    assert 8 not in records or not re.search(records[8]["messagePattern"], "module text")
