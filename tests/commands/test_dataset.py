"""`diagnose dataset validate`: one line per problem, a summary, JSON findings, exit statuses."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import ROOT, SEED, run_cli
from tests.records.factory import record, write_json, write_jsonl


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))


def test_the_seed_and_the_shipped_dataset_are_valid(tmp_path):
    env_free = run_cli("dataset", "validate", str(SEED))
    assert env_free.returncode == 0, env_free.stdout + env_free.stderr
    assert env_free.stdout.strip().startswith("1 record OK, 0 problems in 0 files")
    shipped = run_cli("dataset", "validate")
    assert shipped.returncode == 0, shipped.stdout + shipped.stderr


def test_problems_are_one_line_each_then_a_summary(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(1), record(2, severity="loud"), "x"])
    out = run_cli("dataset", "validate", str(path))
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        f'{path}:2 $.severity: must be one of "fatal", "critical", "error", "warning", "info", '
        'got "loud"',
        f"{path}:3 $: expected an error record or a wrapper object, got string",
        "1 record OK, 2 problems in 1 file (1 file read)",
    ]


def test_json_format_gives_the_same_findings(tmp_path):
    path = write_json(tmp_path / "x.json", [record(1), record(2, lineNumber=0)])
    out = run_cli("dataset", "validate", "--format", "json", str(path))
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["records"] == 1
    assert data["problems"] == [
        {
            "file": str(path),
            "line": None,
            "column": None,
            "index": 1,
            "path": "$.lineNumber",
            "reason": "must be >= 1, got 0",
        }
    ]


def test_a_missing_path_is_a_usage_error(tmp_path):
    out = run_cli("dataset", "validate", str(tmp_path / "nope.json"))
    assert out.returncode == 2
    assert (
        out.stderr.strip() == f"diagnose: error: no such file or folder: {tmp_path / 'nope.json'}"
    )


def test_skipped_files_are_noted_on_stderr(tmp_path):
    write_json(tmp_path / "a.json", record(1))
    write_json(tmp_path / "schema.json", {"$schema": "x"})
    out = run_cli("dataset", "validate", str(tmp_path))
    assert out.returncode == 0
    assert (
        f"note: skipped {tmp_path / 'schema.json'}: a JSON Schema, not error records" in out.stderr
    )


def test_an_infinite_line_number_is_a_problem_not_a_crash(tmp_path):
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(record(1, lineNumber=float("inf"))), encoding="utf-8")
    assert '"lineNumber": Infinity' in path.read_text(encoding="utf-8")
    out = run_cli("dataset", "validate", str(path))
    assert out.returncode == 1, out.stderr
    assert "internal error" not in out.stderr
    assert out.stdout.splitlines()[0].startswith(f"{path} $.lineNumber: expected integer or null")


# --- only regular files are read: FIFOs and devices get one line, in bounded time --------------


def test_a_fifo_is_one_line_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "records.jsonl"
    os.mkfifo(fifo)
    out = run_cli("dataset", "validate", str(fifo), timeout=60)
    assert out.returncode == 1
    assert f"{fifo}: not a regular file (a FIFO)" in out.stdout.splitlines()


def test_dev_zero_is_one_line_not_an_endless_read():
    out = run_cli("dataset", "validate", "/dev/zero", timeout=60)
    assert out.returncode == 1
    assert "/dev/zero: not a regular file (a character device)" in out.stdout.splitlines()


def test_a_fifo_in_a_folder_is_skipped_and_the_valid_files_still_load(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    for shipped in sorted((ROOT / "dataset" / "records").glob("*.json"))[:2]:
        (folder / shipped.name).write_bytes(shipped.read_bytes())
    os.mkfifo(folder / "pipe.json")
    out = run_cli("dataset", "validate", str(folder), timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("2 records OK")
    assert "skipped" in out.stderr and "pipe.json: not a regular file (a FIFO)" in out.stderr
