"""Two nodes with nothing shared but the network: two real torchrun launches on this machine.

Each launch is one "node" (``--nnodes 2``, its own ``--node_rank``, one rank each), runs in
its own working folder with its own TMPDIR and DIAGNOSE_RUN_DIR, and meets the other only
through the rendezvous on localhost. Node 0 must write the one report; node 1 points at it.
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


def two_nodes(tmp_path: Path, *script_args: str) -> tuple[list[Any], Any]:
    """Launch node 0 and node 1 at once; their finished processes and node 0's report."""
    port = str(free_port())
    launches = []
    for node in (0, 1):
        home = tmp_path / f"node{node}"
        (home / "tmp").mkdir(parents=True)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",
            "NO_COLOR": "1",
            "OMP_NUM_THREADS": "1",
            "TMPDIR": str(home / "tmp"),
            "DIAGNOSE_RUN_DIR": str(home / "run"),
        }
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--nproc_per_node",
            "1",
            "--node_rank",
            str(node),
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            port,
            "-m",
            "diagnose",
            "--report",
            "report.json",
            SCRIPT,
            *script_args,
        ]
        launches.append(
            subprocess.Popen(
                cmd,
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    done = []
    try:
        for proc in launches:
            out, err = proc.communicate(timeout=LIMIT_S)
            done.append((proc.returncode, out, err))
    finally:
        for proc in launches:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    report = tmp_path / "node0" / "report.json"
    assert report.exists(), "\n".join(out[-2000:] + err[-3000:] for _, out, err in done)
    assert not (tmp_path / "node1" / "report.json").exists()
    return done, json.loads(report.read_text())


def test_a_nan_born_on_the_second_node_is_reported_once_by_node_0(tmp_path):
    done, report = two_nodes(tmp_path, "--nan-rank", "1", "--nan-step", "3")
    (code0, out0, _), (code1, out1, err1) = done
    assert code0 == code1 == 1
    event = report["event"]
    assert (report["status"], event["rank"], event["phase"], event["step"]) == (
        "nonfinite",
        1,
        "input",
        3,
    )
    rank0, rank1 = report["ranks"]
    assert rank1["status"] == "nonfinite" and rank1["primary"] and not rank0["primary"]
    assert rank0["status"] in ("nonfinite", "stopped")
    assert rank0["history_length"] == rank1["history_length"] == 3
    assert report["config"]["distributed"]["world_size"] == 2
    assert report["fixes"][0]["id"] == "sanitize-inputs"
    assert "born on rank 1 of 2" in out0 and out0.count("Fixes, best first") == 1
    assert "Fixes, best first" not in out1
    assert "rank 1 (node 1)" in err1 and "comes from rank 0 (node 0)" in err1


def test_an_exception_on_the_second_node_is_the_event_and_node_0_stopped(tmp_path):
    done, report = two_nodes(tmp_path, "--crash-rank", "1", "--crash-step", "2")
    (code0, _, _), (code1, _, err1) = done
    assert code0 == code1 == 1
    event = report["event"]
    assert (report["status"], event["rank"], event["exception_type"]) == (
        "exception",
        1,
        "ValueError",
    )
    assert "bad shard on rank 1" in event["message"]
    assert report["ranks"][0]["status"] == "stopped"
    assert report["ranks"][1]["summary"].startswith("raised ValueError")
    assert "raised ValueError" in err1


def test_a_rank_killed_outright_on_the_second_node_is_listed_as_missing(tmp_path):
    done, report = two_nodes(tmp_path, "--kill-rank", "1", "--crash-step", "2")
    (code0, _, _), (code1, _, _) = done
    assert code0 == code1 == 1
    assert report["status"] == "exception"
    assert [r["status"] for r in report["ranks"]] == ["exception", "missing"]
    assert report["ranks"][0]["history_length"] == 2
    assert any("no evidence from rank(s) 1" in w for w in report["warnings"])


def test_a_launcher_without_torchrun_meets_in_a_store_rank_0_hosts(tmp_path):
    """Two plain processes given RANK, WORLD_SIZE and MASTER_ADDR/PORT (as SLURM scripts do):
    rank 0 hosts the store at the master address, and the script's own env:// process
    group shares it."""
    port = str(free_port())
    procs = []
    for rank in (0, 1):
        home = tmp_path / f"rank{rank}"
        (home / "tmp").mkdir(parents=True)
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "NO_COLOR": "1",
            "OMP_NUM_THREADS": "1",
            "TMPDIR": str(home / "tmp"),
            "RANK": str(rank),
            "LOCAL_RANK": "0",
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
        }
        for key in ("TORCHELASTIC_USE_AGENT_STORE", "DIAGNOSE_RUN_DIR", "DIAGNOSE_STORE"):
            env.pop(key, None)
        cmd = [
            sys.executable,
            "-m",
            "diagnose",
            "--format",
            "json",
            "--report",
            "report.json",
            SCRIPT,
            "--crash-rank",
            "1",
            "--crash-step",
            "1",
        ]
        procs.append(
            subprocess.Popen(
                cmd,
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    try:
        outputs = [proc.communicate(timeout=LIMIT_S) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert [proc.returncode for proc in procs] == [1, 1], outputs[0][1][-3000:]
    report = json.loads((tmp_path / "rank0" / "report.json").read_text())
    assert not (tmp_path / "rank1" / "report.json").exists()
    assert (report["event"]["rank"], report["event"]["exception_type"]) == (1, "ValueError")
    assert [r["status"] for r in report["ranks"]] == ["stopped", "exception"]
