"""The report model is the JSON contract: its published schema must stay in step with it."""

from __future__ import annotations

import json

import pytest

from diagnose.report import REPORT_VERSION, Report, ReportError, report_json_schema
from tests.conftest import ROOT

SCHEMA_FILE = ROOT / "docs" / "report.schema.json"


def test_published_schema_matches_the_model():
    published = json.loads(SCHEMA_FILE.read_text())
    assert published == report_json_schema(), (
        "docs/report.schema.json is out of date: run `python -m diagnose.report > "
        "docs/report.schema.json`"
    )


def test_minimal_report_round_trips(tmp_path):
    report = Report(status="clean", script={"path": "train.py", "argv": ["--lr", "1"]})
    path = tmp_path / "r.json"
    report.write(path)
    again = Report.load(path)
    assert again == report
    data = json.loads(path.read_text())
    for key in (
        "version",
        "status",
        "script",
        "event",
        "frames",
        "history",
        "config",
        "symptoms",
        "fixes",
        "matches",
    ):
        assert key in data
    assert data["version"] == REPORT_VERSION


def test_newer_version_loads_with_a_warning_and_keeps_unknown_keys(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            {
                "version": REPORT_VERSION + 1,
                "status": "clean",
                "script": {"path": "t.py"},
                "something_new": {"a": 1},
            }
        )
    )
    report = Report.load(path)
    assert report.warnings and "newer" in report.warnings[0]
    assert report.model_extra["something_new"] == {"a": 1}


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "no such report file"),
        ("{not json", "not JSON"),
        ("[1, 2]", "a report is a JSON object"),
        ('{"status": "weird", "script": {"path": "t.py"}}', "$.status"),
    ],
)
def test_bad_report_files_give_one_clear_line(tmp_path, content, fragment):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ReportError) as info:
        Report.load(path)
    message = str(info.value)
    assert fragment in message and "\n" not in message and str(path) in message


def test_inf_and_nan_survive_a_round_trip(tmp_path):
    report = Report(
        status="nonfinite",
        script={"path": "t.py"},
        frames=[
            {
                "index": 0,
                "outputs": [
                    {"name": "output", "abs_max": float("inf")},
                    {"name": "output[1]", "abs_max": float("nan")},
                ],
            }
        ],
    )
    path = tmp_path / "r.json"
    report.write(path)

    def reject(token):
        raise AssertionError(f"bare {token} is not JSON")

    json.loads(path.read_text(), parse_constant=reject)
    outputs = Report.load(path).frames[0].outputs
    assert outputs[0].abs_max == float("inf")
    assert outputs[1].abs_max != outputs[1].abs_max


# --- a report of any shape loads or gives one line ---------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["NaN", "inf", "-Infinity", "clean", "nonfinite", "exception", ""])
    | st.text(max_size=8)
)
_KEYS = st.sampled_from(
    [
        "version",
        "status",
        "script",
        "path",
        "argv",
        "event",
        "kind",
        "phase",
        "step",
        "frames",
        "history",
        "config",
        "lr",
        "grad_clip",
        "symptoms",
        "fixes",
        "matches",
        "score",
        "id",
        "warnings",
        "facts",
        "location",
        "line",
    ]
) | st.text(max_size=5)
_JSON_LIKE = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYS, _JSON_LIKE, max_size=8) | _JSON_LIKE)
def test_any_json_like_value_is_a_report_or_one_line_report_error(data):
    try:
        report = Report.from_data(data, source="crafted.json")
    except ReportError as exc:
        message = str(exc)
        assert message.startswith("crafted.json: ") and "\n" not in message
    else:
        assert isinstance(report, Report)
        json.loads(report.to_json())  # and it can be shown


def test_a_value_nested_past_the_recursion_limit_is_one_line_report_error():
    data: object = []
    for _ in range(100_000):
        data = [data]
    with pytest.raises(ReportError, match="nested deeper than"):
        Report.from_data({"status": "clean", "script": {"path": "x"}, "config": {"a": data}})


def test_a_report_nested_past_what_the_serializer_takes_is_one_line_report_error():
    data: object = []
    for _ in range(900):
        data = [data]
    with pytest.raises(ReportError, match="nested deeper than"):
        Report.from_data({"status": "clean", "script": {"path": "x"}, "config": {"a": data}})


def _validates_against_the_published_schema(data):
    import jsonschema

    published = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator(published).validate(data)


def test_an_interrupted_report_is_in_the_published_schema(tmp_path):
    published = json.loads(SCHEMA_FILE.read_text())
    assert "interrupted" in published["properties"]["status"]["enum"]
    report = Report(
        status="interrupted",
        script={"path": "train.py"},
        interruption={
            "cause": "SIGTERM",
            "stopped_at_step": 41,
            "message": "interrupted at step 41 by SIGTERM",
        },
        history=[{"step": 40, "loss": 0.5}],
    )
    path = tmp_path / "r.json"
    report.write(path)
    data = json.loads(path.read_text())
    _validates_against_the_published_schema(data)
    again = Report.load(path)
    assert again.interruption.cause == "SIGTERM" and again.interruption.stopped_at_step == 41


def test_a_summarised_history_is_in_the_published_schema():
    report = Report(
        status="clean",
        script={"path": "train.py"},
        history=[
            {"step": 0, "loss": 2.0},
            {
                "step": 1,
                "loss": 1.5,
                "summary": {
                    "last_step": 9,
                    "steps": 9,
                    "loss_min": 1.0,
                    "loss_max": 2.0,
                    "skipped_steps": 1,
                },
            },
            {"step": 10, "loss": 1.0},
        ],
        history_note={
            "steps": 11,
            "first_kept": 1,
            "last_kept": 1,
            "summarized": 9,
            "message": "the steps between are summarised",
        },
    )
    _validates_against_the_published_schema(json.loads(report.to_json()))
    assert report.steps_recorded == 11


def test_an_unknown_interruption_cause_is_one_clear_line(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            {
                "status": "interrupted",
                "script": {"path": "t.py"},
                "interruption": {"cause": "SIGFOO", "message": "x"},
            }
        )
    )
    with pytest.raises(ReportError) as info:
        Report.load(path)
    assert "$.interruption.cause" in str(info.value)


# --- reports written before events carried their op inputs as numbers -------------------------


def _older_report(tmp_path, op_inputs, detail):
    """A report as an older diagnose wrote it: the op inputs' true minima only in prose."""
    event = {
        "kind": "nonfinite",
        "phase": "forward",
        "op": "div",
        "message": "first non-finite: step 0, forward, ...",
        "op_inputs": op_inputs,
        "details": [detail],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"status": "nonfinite", "script": {"path": "t.py"}, "event": event}))
    return Report.load(path)


def test_an_older_report_gets_its_op_input_numbers_from_its_detail_line(tmp_path):
    report = _older_report(
        tmp_path,
        [
            {"name": "input[0]", "dtype": "float32", "abs_min": 0.02, "abs_max": 3.0},
            {"name": "input[1]", "dtype": "float32", "abs_min": 0.5, "abs_max": 2.5, "min": -1},
        ],
        "div received min |x| = 1.11e-05, max |x| = 3; min |x| = 0, max |x| = 2.5, min x = -1 "
        "and returned nan",
    )
    first, second = report.event.op_input_values
    assert (first.name, first.dtype, first.min_abs, first.max_abs) == (
        "input[0]",
        "float32",
        1.11e-05,
        3.0,
    )
    assert (second.min_abs, second.max_abs, second.min) == (0.0, 2.5, -1.0)
    assert report.event.details[0].startswith("div received")  # the prose stays as it was
    _validates_against_the_published_schema(json.loads(report.to_json()))


def test_an_older_detail_line_numbers_the_inputs_that_had_magnitudes_only(tmp_path):
    # An integer input has no |x|; the detail line skipped it, so its first part is input[1]'s.
    report = _older_report(
        tmp_path,
        [
            {"name": "input[0]", "dtype": "int64", "min": 0, "max": 3},
            {"name": "input[1]", "dtype": "float32", "abs_min": 0.5, "abs_max": 2.5},
        ],
        "div received min |x| = 0, max |x| = 2.5 and returned inf",
    )
    ints, floats = report.event.op_input_values
    assert (ints.min, ints.max, ints.min_abs, ints.max_abs) == (0.0, 3.0, None, None)
    assert (floats.min_abs, floats.max_abs) == (0.0, 2.5)


@pytest.mark.parametrize(
    ("op_inputs", "detail"),
    [
        ([{"name": "input[0]", "abs_max": 1.0}], "div received min |x| = ?, max |x| = nan"),
        ([{"name": "input[0]", "abs_max": 1.0, "min": "low"}], "div received min |x| = 1e999"),
        ([{"name": 3}], "div received min |x| = 0, max |x| = 1"),
        ("not a list", "div received min |x| = 0, max |x| = 1"),
    ],
)
def test_an_odd_older_detail_line_loads_with_what_it_can_say(tmp_path, op_inputs, detail):
    try:
        report = _older_report(tmp_path, op_inputs, detail)
    except ReportError as exc:  # a malformed op_inputs is the report's own one-line error
        assert "op_inputs" in str(exc) and "\n" not in str(exc)
        return
    for values in report.event.op_input_values or []:
        assert values.min_abs is None


def test_a_report_with_op_input_values_keeps_them_over_its_prose(tmp_path):
    event = {
        "kind": "nonfinite",
        "message": "m",
        "op_inputs": [{"name": "input[0]", "abs_max": 2.0}],
        "op_input_values": [{"name": "input[0]", "min_abs": 0.25, "max_abs": 2.0}],
        "details": ["log received min |x| = 0, max |x| = 2 and returned -inf"],
    }
    report = Report.from_data({"status": "nonfinite", "script": {"path": "t.py"}, "event": event})
    assert report.event.op_input_values[0].min_abs == 0.25
