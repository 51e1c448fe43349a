"""The error file a rank leaves for torchrun, read back by torchrun's own failure classes."""

from __future__ import annotations

import json

import pytest
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

from diagnose.distributed.elastic import ERROR_FILE_ENV, record_diagnosis
from diagnose.report import Event, Fix, Report, ScriptInfo, Symptom


def _report(**changes) -> Report:
    event = Event(
        kind="nonfinite",
        phase="forward",
        step=3,
        module="encoder.fc2\x1b[2J",
        module_type="Linear",
        op="linear",
        message="inf from finite input",
    )
    values = {
        "status": "nonfinite",
        "script": ScriptInfo(path="train.py", argv=[]),
        "event": event,
        "symptoms": [Symptom(id="fp16-overflow", confidence=0.85, title="fp16 overflow")],
        "fixes": [Fix(id="use-bf16", score=0.9, title="t", why="w", example_patch="p")],
    }
    values.update(changes)
    return Report(**values)


def test_torchrun_reads_the_diagnosis_as_the_root_cause(tmp_path, monkeypatch):
    error_file = tmp_path / "error.json"
    monkeypatch.setenv(ERROR_FILE_ENV, str(error_file))
    assert record_diagnosis(2, _report(), tmp_path / "r.json") == error_file
    failure = ProcessFailure(local_rank=2, pid=123, exitcode=1, error_file=str(error_file))
    table = ChildFailedError("diagnose", {2: failure}).format_msg()
    assert (
        "traceback : diagnose diagnosed a problem on rank 2 (exit status 1; not a crash of "
        "diagnose): first non-finite value: step 3, forward, in encoder.fc2"
    ) in table
    assert "likely cause: fp16 overflow (0.85); first fix: use-bf16" in table
    assert f"report: {tmp_path / 'r.json'}" in table
    assert "\x1b" not in table  # a module name from the run is untrusted text


def test_an_exception_and_another_ranks_report_are_said_so(tmp_path, monkeypatch):
    error_file = tmp_path / "error.json"
    monkeypatch.setenv(ERROR_FILE_ENV, str(error_file))
    raised = Event(kind="exception", message="ValueError: bad batch\nmore lines")
    record_diagnosis(1, _report(status="exception", event=raised, symptoms=[]), None, 0)
    text = json.loads(error_file.read_text())["message"]["extraInfo"]["py_callstack"]
    assert text.splitlines() == [
        "diagnose diagnosed a problem on rank 1 (exit status 1; not a crash of diagnose): "
        "the script raised: ValueError: bad batch",
        "the report of all ranks comes from rank 0",
    ]


def test_an_error_file_already_there_is_the_scripts_own_and_is_kept(tmp_path, monkeypatch):
    error_file = tmp_path / "error.json"
    error_file.write_text('{"message": "the script recorded its own failure"}')
    monkeypatch.setenv(ERROR_FILE_ENV, str(error_file))
    assert record_diagnosis(0, _report(), None) is None
    assert error_file.read_text() == '{"message": "the script recorded its own failure"}'


@pytest.mark.parametrize("value", [None, ""])
def test_outside_torchrun_nothing_is_written(tmp_path, monkeypatch, value):
    if value is None:
        monkeypatch.delenv(ERROR_FILE_ENV, raising=False)
    else:
        monkeypatch.setenv(ERROR_FILE_ENV, value)
    monkeypatch.chdir(tmp_path)
    assert record_diagnosis(0, _report(), None) is None
    assert list(tmp_path.iterdir()) == []


def test_a_rank_from_the_launcher_is_read_when_none_is_given(tmp_path, monkeypatch):
    error_file = tmp_path / "error.json"
    monkeypatch.setenv(ERROR_FILE_ENV, str(error_file))
    monkeypatch.setenv("RANK", "5")
    record_diagnosis(None, _report(), None)
    assert json.loads(error_file.read_text())["message"]["message"].startswith(
        "diagnose diagnosed a problem on rank 5 "
    )
