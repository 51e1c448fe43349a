"""Every string of a report may be hostile: no renderer lets a control through or drops the words."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given

from diagnose.render import render
from diagnose.report import Report
from tests.untrusted import (
    ATTACKS,
    MARKUP,
    STATUSES,
    assert_no_controls,
    every_field,
    examples,
    hostile_reports,
)

EVERY_ATTACK = "".join(a for a in ATTACKS if a != MARKUP)
OUR_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


@examples(25)
@given(hostile_reports())
def test_no_control_reaches_the_output_of_any_format(data):
    report = Report.model_validate(data)
    for fmt in ("text", "markdown", "json"):
        assert_no_controls(render(report, fmt), fmt)
    assert_no_controls(OUR_COLOURS.sub("", render(report, "text", color=True)), "coloured text")


@examples(20)
@given(hostile_reports())
def test_the_json_report_reads_back_equal(data):
    report = Report.model_validate(data)
    assert Report.model_validate(json.loads(render(report, "json"))) == report


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_markup_in_every_field_is_shown_as_text(status, fmt):
    out = render(Report.model_validate(every_field(MARKUP, status)), fmt)
    assert MARKUP in out
    assert out.count(MARKUP) >= 10  # the field lines, not only one of them


@pytest.mark.parametrize("status", STATUSES)
def test_each_field_the_renderers_left_raw_is_safe_now(status):
    # fix and symptom ids, a fix's rules, a frame's dtype, precision, optimizer, a record id
    report = Report.model_validate(every_field(EVERY_ATTACK, status))
    for fmt in ("text", "markdown"):
        out = render(report, fmt)
        assert_no_controls(out, fmt)
        for word in ("ZWNobyBwd25lZA==", "title", "file:///etc/passwd", "544e"):
            assert word not in out, (fmt, word)  # sequences go whole


def test_json_escapes_c1_controls_and_keeps_them():
    report = Report.model_validate(every_field("nel\x85csi\x9bst\x9c del\x7f", "exception"))
    out = render(report, "json")
    assert "\x85" not in out and "\x9b" not in out and "\x7f" not in out
    assert "nel\\u0085csi\\u009bst\\u009c del\\u007f" in out
    assert Report.model_validate(json.loads(out)) == report


def test_a_report_file_with_an_undecodable_file_name_is_written_and_reads_back(tmp_path):
    # sys.argv holds a file name's undecodable bytes as lone surrogates
    report = Report(status="clean", script={"path": "train\udcff.py", "argv": ["--x\udc80"]})
    report.write(tmp_path / "r.json")
    assert Report.load(tmp_path / "r.json") == report
    assert "train\\udcff.py" in render(report, "text")
