"""`diagnose match` echoes a pasted log back: never a byte of it that a terminal would act on."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.cli import main
from tests.conftest import run_cli
from tests.untrusted import assert_no_controls, examples, hostile_text

# Every control the shape error below carries: reset, alignment test, line drawing,
# backspaces, NUL, 8-bit CSI and OSC, and torch's own bold.
CONTROLS = "\x1bc \x1b#8 \x1b(0 \x08\x08 \x00 \x9b2J \x9d0;pwned\x07 \x1b[1m \x1b[0m"
SHAPES = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 4, in <module>\n'
    "RuntimeError: mat1 and mat2 \x1bcshapes\x1b#8 cannot\x1b(0 be\x08\x08 multiplied\x00 "
    "\x9b2J\x9d0;pwned\x07(\x1b[1m2x3\x1b[0m and 4x5)\n"
)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_echoed_error_line_and_the_quoted_reason_carry_no_control(fmt):
    out = run_cli("match", "--format", fmt, "-", stdin=SHAPES)
    assert out.returncode == 0, out.stderr
    assert_no_controls(out.stdout, f"match --format {fmt}")
    assert "pwned" not in out.stdout  # the OSC went whole, its text with it
    if fmt == "json":
        data = json.loads(out.stdout)
        assert data["matches"][0]["slug"] == "mat1-and-mat2-shapes-cannot-be-multiplied"
        assert "(2x3 and 4x5)" in data["query"]["error_lines"][0]["text"]  # no [1m left
    else:
        assert "1. mat1-and-mat2-shapes-cannot-be-multiplied" in out.stdout
        assert "why: " in out.stdout and "(2x3 and 4x5)" in out.stdout


def test_json_escapes_c1_controls_of_the_query():
    out = run_cli("match", "--format", "json", "RuntimeError: next\x85line csi\x9b")
    assert "\x85" not in out.stdout and "\x9b" not in out.stdout
    assert "next\\u0085line" in out.stdout
    text = json.loads(out.stdout)["query"]["error_lines"][0]["text"]
    assert text == "RuntimeError: next\x85line csi\x9b"  # escaped, not lost


def _match(argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["match", *argv])
    finally:
        sys.stdin = saved
    return status, out.getvalue(), err.getvalue()


@examples(30)
@given(
    text=hostile_text.map(lambda t: f"Traceback (most recent call last):\nRuntimeError: {t}\n{t}"),
    route=st.sampled_from(["argv", "file", "stdin"]),
    fmt=st.sampled_from(["text", "json"]),
)
def test_no_control_of_any_input_reaches_the_output(text, route, fmt):
    with tempfile.TemporaryDirectory() as tmp:
        if route == "file":
            log = Path(tmp, "train.log")
            log.write_text(text, encoding="utf-8")
            status, out, err = _match(["--format", fmt, str(log)])
        elif route == "stdin":
            status, out, err = _match(["--format", fmt, "-"], stdin=text)
        else:
            status, out, err = _match(["--format", fmt, text])
    assert status in (0, 1), err
    assert_no_controls(out, f"{route} {fmt}")
    assert_no_controls(err, f"{route} {fmt} stderr")
    if fmt == "json":
        json.loads(out)


def test_a_record_with_megabytes_of_text_is_shown_within_bounds(tmp_path):
    from tests.records.factory import wrapper, write_jsonl

    huge = wrapper(
        7,
        errorMessage="zzqx exploded badly",
        messagePattern="zzqx exploded",
        solutions=["S" * 2_000_000, *[f"also {i}" for i in range(100)]],
        exampleFix="F" * 1_000_000,
    )
    dataset = write_jsonl(tmp_path / "big.jsonl", [huge])
    run = run_cli("match", "--dataset", str(dataset), "zzqx exploded badly")
    assert run.returncode == 0, run.stderr
    assert len(run.stdout) < 50_000
    words = " ".join(run.stdout.split())  # the note may be wrapped onto the next line
    assert "[cut: 2,000,000 characters in all; the full text is in record" in words
    assert "more in the record" in run.stdout
