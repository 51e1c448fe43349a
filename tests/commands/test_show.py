"""`diagnose show REPORT.json`: the TUI on a terminal, text (or --format) otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tests.conftest import ROOT, run_cli
from tests.tui.conftest import FP16_REPORT


def test_without_a_terminal_it_prints_the_text_report_and_returns():
    start = time.perf_counter()
    out = subprocess.run(
        f"{sys.executable} -m diagnose show {FP16_REPORT} </dev/null | cat",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "model.2 (Linear) produced inf in forward at step 37" in out.stdout
    assert "\x1b[" not in out.stdout  # no terminal: no UI, no escape sequences
    assert time.perf_counter() - start < 30


def test_format_tui_without_a_terminal_falls_back_to_text():
    out = run_cli("show", str(FP16_REPORT), "--format", "tui")
    assert out.returncode == 0
    assert "Train in bfloat16 instead of float16" in out.stdout


def test_format_json_prints_the_report():
    out = run_cli("show", str(FP16_REPORT), "--format", "json")
    assert out.returncode == 0
    assert json.loads(out.stdout)["event"]["module"] == "model.2"


def test_format_markdown():
    out = run_cli("show", str(FP16_REPORT), "--format", "markdown")
    assert out.returncode == 0
    assert "use-bf16" in out.stdout and "```" in out.stdout


def test_a_missing_report_is_one_line_and_exit_2(tmp_path):
    out = run_cli("show", str(tmp_path / "nope.json"))
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        f"diagnose: error: {tmp_path / 'nope.json'}: no such report file"
    ]
    assert out.stdout == ""


def test_a_report_that_is_not_json_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = run_cli("show", str(bad))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"diagnose: error: {bad}:1:2: not JSON")


def test_a_newer_report_still_shows(tmp_path):
    data = json.loads(FP16_REPORT.read_text())
    data["version"] = 7
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data))
    out = run_cli("show", str(path))
    assert out.returncode == 0
    assert "version 7 is newer" in out.stdout + out.stderr


def _one_error_line(out, path) -> str:
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"diagnose: error: {path}: "), out.stderr
    assert "internal error" not in out.stderr
    return lines[0]


def test_a_report_nested_100k_levels_deep_is_one_line_and_exit_2(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested too deep" in _one_error_line(run_cli("show", str(deep), timeout=60), deep)
    inner = tmp_path / "inner.json"
    inner.write_text(
        '{"status": "clean", "script": {"path": "x"}, "config": {"a": '
        + "[" * 100_000
        + "]" * 100_000
        + "}}"
    )
    _one_error_line(run_cli("apply", str(inner), "use-bf16", timeout=60), inner)


def test_a_report_with_an_integer_past_pythons_digit_limit_is_one_line(tmp_path):
    big = tmp_path / "big.json"
    big.write_text('{"status": "clean", "script": {"path": "x"}, "version": ' + "9" * 5000 + "}")
    _one_error_line(run_cli("show", str(big), timeout=60), big)


def test_a_fifo_as_report_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    line = _one_error_line(run_cli("show", str(fifo), timeout=60), fifo)
    assert line.endswith("not a regular file (a FIFO)")


def test_a_report_whose_warning_writes_the_clipboard_prints_it_inert(tmp_path):
    data = json.loads(FP16_REPORT.read_text())
    data["warnings"] = ["tracer: not recorded: \x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2Jboom\x9b2J"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    for fmt in ("text", "markdown", "json"):
        out = run_cli("show", str(path), "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert not any(c in out.stdout for c in "\x1b\x07\x9b"), fmt
        assert "boom" in out.stdout
    assert "\nwarning: tracer: not recorded: boom\n" in run_cli("show", str(path)).stdout


def test_the_error_line_shows_a_hostile_file_name_on_one_inert_line(tmp_path):
    name = tmp_path / "r\x1b]52;c;ZWNobyBwd25lZA==\x07\n\x1b[2J.json"
    out = run_cli("show", str(name))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "\x1b" not in out.stderr and "\x07" not in out.stderr
    assert (
        out.stderr.startswith(f"diagnose: error: {tmp_path}/r ")
        and "no such report file" in out.stderr
    )
