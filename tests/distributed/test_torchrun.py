"""End to end: real 2-rank gloo jobs on CPU, launched by torchrun or by ``diagnose --nproc``.

Each job is bounded by a subprocess timeout, so a rank left hanging in a collective fails
the test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.distributed.helpers import free_port

SCRIPT = str(ROOT / "tests" / "scripts" / "ddp_train.py")
LIMIT_S = 300

pytestmark = pytest.mark.slow


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def torchrun(report: Path, *script_args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    done = _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            str(free_port()),
            "-m",
            "diagnose",
            "--report",
            str(report),
            SCRIPT,
            *script_args,
        ]
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(report.read_text())


def nproc(report: Path, *script_args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    done = _run(
        [
            sys.executable,
            "-m",
            "diagnose",
            "--nproc",
            "2",
            "--report",
            str(report),
            SCRIPT,
            *script_args,
        ]
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(report.read_text())


def test_a_nan_in_rank_1s_data_is_reported_on_rank_1_under_torchrun(tmp_path):
    done, report = torchrun(tmp_path / "r.json", "--nan-rank", "1", "--nan-step", "3")
    assert done.returncode == 1
    event = report["event"]
    assert (report["status"], event["rank"], event["phase"], event["step"]) == (
        "nonfinite",
        1,
        "input",
        3,
    )
    rank0, rank1 = report["ranks"]
    assert rank1["status"] == "nonfinite" and rank1["primary"] and not rank0["primary"]
    if rank0["status"] == "nonfinite":
        # the NaN reached rank 0 through the gradient all-reduce: its own were finite
        assert (rank0["phase"], rank0["local_grads_finite"]) == ("backward", True)
    else:
        assert rank0["status"] == "stopped" and rank0["summary"].startswith("saw nothing")
    assert rank0["history_length"] == rank1["history_length"] == 3
    dist = report["config"]["distributed"]
    assert dist["world_size"] == 2 and dist["backend"] == "gloo"
    assert dist["ddp"]["bucket_cap_mb"] == 25.0 and dist["ddp"]["all_reduce"] == "allreduce"
    assert report["fixes"][0]["id"] == "sanitize-inputs"
    assert "born on rank 1 of 2" in done.stdout  # one combined report on the terminal
    assert done.stdout.count("Fixes, best first") == 1
    # torchrun's failure table names what diagnose found as its root cause, not an unexplained
    # failure (the other rank may be stopped by torchrun before it writes a file of its own)
    root_cause = done.stderr.partition("Root Cause (first observed failure):")[2]
    assert "(exit status 1; not a crash of diagnose)" in root_cause, done.stderr
    assert "error_file: <N/A>" not in root_cause, done.stderr


def test_one_process_under_torchrun_standalone_names_the_diagnosis_in_torchruns_table(tmp_path):
    report_path = tmp_path / "r.json"
    done = _run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "1",
            "-m",
            "diagnose",
            "--format",
            "text",
            "--report",
            str(report_path),
            SCRIPT,
            "--nan-rank",
            "0",
            "--nan-step",
            "2",
        ]
    )
    assert done.returncode == 1  # a diagnosed problem stays a failure for torchrun and CI
    report = json.loads(report_path.read_text())
    assert (report["status"], report["event"]["step"]) == ("nonfinite", 2)
    assert "Fixes, best first" in done.stdout
    table = done.stderr[done.stderr.index("Root Cause (first observed failure)") :]
    assert (
        "traceback : diagnose diagnosed a problem on rank 0 (exit status 1; not a crash of "
        "diagnose): first non-finite value: step 2, input"
    ) in table
    assert f"report: {report_path}" in table
    assert "To enable traceback see" not in table and "error_file: <N/A>" not in table


def test_an_lr_far_too_high_gets_the_same_diagnosis_on_two_ranks_as_on_one(tmp_path):
    args = ("--lr", "1e4", "--steps", "30")
    done, report = nproc(tmp_path / "two.json", *args)
    single = subprocess.run(
        [sys.executable, "-m", "diagnose", "--report", str(tmp_path / "one.json"), SCRIPT, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    one = json.loads((tmp_path / "one.json").read_text())
    assert done.returncode == single.returncode == 1
    assert report["fixes"][0]["id"] == one["fixes"][0]["id"] == "lower-learning-rate"
    assert (report["event"]["phase"], report["event"]["step"]) == (
        one["event"]["phase"],
        one["event"]["step"],
    )
    assert report["event"]["rank"] in (0, 1) and one["event"]["rank"] is None
    assert len(report["ranks"]) == 2


def test_a_healthy_two_rank_run_is_clean(tmp_path):
    done, report = nproc(tmp_path / "r.json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert report["status"] == "clean" and report["event"] is None
    assert [r["status"] for r in report["ranks"]] == ["clean", "clean"]
    assert all(r["history_length"] == 8 for r in report["ranks"])


def test_a_rank_that_raises_is_named_with_what_it_raised(tmp_path):
    done, report = torchrun(tmp_path / "r.json", "--crash-rank", "1", "--crash-step", "2")
    assert done.returncode == 1
    event = report["event"]
    assert (report["status"], event["rank"], event["exception_type"]) == (
        "exception",
        1,
        "ValueError",
    )
    assert "bad shard on rank 1" in event["message"]
    assert report["ranks"][0]["status"] == "stopped"
    assert report["ranks"][1]["summary"].startswith("raised ValueError")


def test_fsdp2_dtensor_shard_corrupted_on_one_rank_is_reported_there(tmp_path):
    done, report = nproc(tmp_path / "r.json", "--fsdp", "--nan-weight-rank", "1", "--nan-step", "3")
    assert done.returncode == 1
    event = report["event"]
    assert (event["rank"], event["phase"], event["step"]) == (1, "optimizer", 3)
    assert event["module"] == "0"
    assert report["config"]["distributed"]["dtensor_parameters"] is True
    # rank 0 only received the NaN through the all-gather, one step later
    assert report["ranks"][0]["step"] == 4
