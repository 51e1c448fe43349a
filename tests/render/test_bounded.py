"""What a person is shown is bounded: a huge message or list is cut with a note saying where
the full value is; JSON (data for programs) and the report file are never cut."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from diagnose.render import render
from diagnose.render.bounded import MAX_CHARS, MAX_ITEMS, bounded
from diagnose.report import Report
from tests.conftest import run_cli
from tests.untrusted import examples, report_data


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@given(
    size=st.integers(0, 3 * MAX_CHARS),
    rows=st.integers(0, 2 * MAX_ITEMS),
    status=st.sampled_from(["nonfinite", "exception"]),
)
@examples(12)
def test_every_shown_string_and_list_is_within_bounds_and_says_where_the_rest_is(
    size, rows, status
):
    data = report_data(lambda: "m" * size, status)
    data["history"] = [{"step": i, "loss": 1.0} for i in range(rows)]
    report = Report.model_validate(data)
    shown = bounded(report, "runs/r.json")
    note = len(" [cut: 99,999,999 characters in all; the full text is in runs/r.json]") + 1
    for text in _strings(shown.model_dump(mode="python")):
        assert len(text) <= MAX_CHARS + note
    assert len(shown.history) == min(rows, MAX_ITEMS)
    if size > MAX_CHARS:
        assert shown.event.message.endswith(
            f"[cut: {size:,} characters in all; the full text is in runs/r.json]"
        )
        assert len(render(shown, "text")) < 200 * MAX_CHARS
    if size <= MAX_CHARS and rows <= MAX_ITEMS:
        assert shown is report  # nothing to cut: the very report is shown


def test_show_of_a_40_mb_message_prints_a_bounded_text_and_json_stays_whole(tmp_path):
    path = tmp_path / "big.json"
    message = "overflow " * 4_500_000  # 40.5 MB
    Report.model_validate(
        {
            "status": "exception",
            "script": {"path": "t.py"},
            "event": {"kind": "exception", "message": message},
        }
    ).write(path)
    text = run_cli("show", str(path), "--format", "text")
    assert text.returncode == 0, text.stderr
    assert len(text.stdout) < 100_000
    assert f"characters in all; the full text is in {path}]" in text.stdout
    whole = run_cli("show", str(path), "--format", "json")
    assert json.loads(whole.stdout)["event"]["message"] == message
    assert json.loads(path.read_text())["event"]["message"] == message
