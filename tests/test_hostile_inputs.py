"""Every file a command reads, whatever bytes it holds, ends in an answer or in one clear
line and exit 2 (or the command's own "problems found" 1) -- never an internal error, a
traceback or a hang: rule files, config files, record files and saved reports alike."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.capture.config_file import load_config_file
from diagnose.cli import main
from diagnose.errors import UsageError
from tests.untrusted import assert_no_controls, examples

BIG = "9" * 5000
YAML_PIECES = (
    f"lr: {BIG}\n",
    "lr: !!binary aGVsbG8=\n",
    "s: !!set {a: null}\n",
    'm: "\\ud800"\n',
    "when: 2024-01-01\n",
    "a: &a [1, 2]\nb: [*a, *a, *a]\n",
    "id: x\ntitle: \x1b]52;c;eA==\x07\n",
    "x: [" * 3000 + "]" * 3000 + "\n",
    "conditions: {all: [{fact: event.op, operator: matches, value: '(?:(?:x{300}){300}){300}'}]}\n",
    "lr: 1e99999\n",
    "\t: bad\n",
)
JSON_PIECES = (
    f'{{"record": {{"id": "a", "lineNumber": {BIG}}}}}',
    f'{{"version": 1, "status": "clean", "script": {{"path": "t.py"}}, "history": [{{"step": {BIG}}}]}}',
    '{"version": 1, "status": "clean", "script": {"path": "\\ud800\\u202e"}}',
    '{"record": {"messagePattern": "(?:(?:x{300}){300}){300}"}}',
    "[" * 100_000 + "]" * 100_000,
    '{"a": NaN, "b": Infinity}',
    "\ufeff{}",
)
BYTES = (b"\xff\xfe\x00", b"\x00" * 8, b"\xc3", b"\x1b[2J", b"\r\n")

yaml_files = st.lists(
    st.sampled_from(YAML_PIECES) | st.text(max_size=12), min_size=1, max_size=3
).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass")) | st.sampled_from(BYTES)
json_files = (
    st.sampled_from(JSON_PIECES).map(lambda s: s.encode("utf-8", "surrogatepass"))
    | st.lists(st.sampled_from(JSON_PIECES) | st.text(max_size=8), min_size=1, max_size=3).map(
        lambda parts: "\n".join(parts).encode("utf-8", "surrogatepass")
    )
    | st.binary(max_size=40)
)


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse
            status = exc.code
    return int(status or 0), out.getvalue(), err.getvalue()


def _assert_answered(argv: list[str], allowed: set[int]) -> None:
    status, out, err = _cli(argv)
    assert status in allowed, (argv, status, err[-500:])
    assert "internal error" not in err and "Traceback" not in err, err[-500:]
    for stream, text in (("stdout", out), ("stderr", err)):
        assert_no_controls(text, stream)
        text.encode("utf-8")


@given(data=yaml_files)
@examples(60)
def test_a_config_file_of_any_bytes_is_read_or_refused_in_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("config") / "train.yaml"
    path.write_bytes(data)
    try:
        config = load_config_file(path)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    json.dumps(config)  # plain data only


@given(data=yaml_files)
@examples(40)
def test_a_rule_file_of_any_bytes_is_listed_or_refused_in_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("rules") / "r1.yaml"
    path.write_bytes(data)
    _assert_answered(["rules", "list", "--rules", str(path)], {0, 1, 2})


@given(data=json_files)
@examples(40)
def test_a_record_file_of_any_bytes_is_validated_or_refused_in_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("records") / "records.jsonl"
    path.write_bytes(data)
    _assert_answered(["dataset", "validate", str(path)], {0, 1, 2})
    _assert_answered(
        ["match", "--dataset", str(path), "--format", "json", "RuntimeError: boom"], {0, 1, 2}
    )


@given(data=json_files)
@examples(40)
def test_a_report_file_of_any_bytes_is_shown_or_refused_in_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("reports") / "r.json"
    path.write_bytes(data)
    _assert_answered(["show", "--format", "text", str(path)], {0, 2})


@pytest.mark.parametrize("piece", [p for p in JSON_PIECES if "status" in p])
def test_the_crafted_reports_are_each_answered(tmp_path, piece):
    path = tmp_path / "r.json"
    path.write_text(piece, encoding="utf-8", errors="surrogatepass")
    _assert_answered(["show", "--format", "text", str(path)], {0, 2})
