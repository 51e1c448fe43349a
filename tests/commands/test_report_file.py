"""The ``--report`` target: resolved and checked before the run, one clear line when it
cannot be written, and a stream (a pipe, ``/dev/stdout``) gets one whole report."""

from __future__ import annotations

import json
import os
import threading

import pytest

from diagnose.commands.report_file import ReportFile
from diagnose.errors import UsageError
from diagnose.report import Report


def test_a_relative_path_is_fixed_to_where_it_was_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = ReportFile.check(tmp_path.joinpath("r.json").relative_to(tmp_path))
    monkeypatch.chdir("/")
    assert target.path == tmp_path / "r.json"


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("missing/r.json", "no such folder"),
        (".", "is a folder, not a file"),
    ],
)
def test_a_path_that_cannot_take_a_report_is_one_clear_line(tmp_path, name, fragment):
    with pytest.raises(UsageError) as info:
        ReportFile.check(tmp_path / name)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_a_stream_gets_the_final_report_only(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    target = ReportFile.check(fifo)
    evidence = Report(status="nonfinite", script={"path": "train.py"})
    target.claim(evidence)
    target.checkpoint(evidence)
    assert target.write(Report(status="clean", script={"path": "train.py"}))
    reader.join(timeout=30)
    assert json.loads(got[0])["status"] == "clean"
