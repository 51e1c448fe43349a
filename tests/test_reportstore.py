"""The default place of a run's report: chosen by the environment, unique per run and rank,
bounded in number, the newest found by ``diagnose show``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from diagnose import reportstore
from diagnose.reportstore import StoreError, keep, new_report_path, newest, prune, report_dir
from tests.conftest import run_cli

HEALTHY = """\
import torch
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    model(torch.ones(2, 3)).pow(2).mean().backward()
    opt.step()
"""


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "reports"
    monkeypatch.setenv("DIAGNOSE_REPORT_DIR", str(folder))
    monkeypatch.delenv("DIAGNOSE_REPORTS_KEEP", raising=False)
    return folder


def test_the_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_REPORT_DIR", str(tmp_path / "mine"))
    assert report_dir() == tmp_path / "mine"
    monkeypatch.delenv("DIAGNOSE_REPORT_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert report_dir() == tmp_path / "state" / "diagnose" / "reports"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # the XDG spec ignores it
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert report_dir() == tmp_path / "home" / ".local" / "state" / "diagnose" / "reports"


def test_names_are_unique_per_run_and_rank_and_sort_by_time(store):
    first = new_report_path("train.py", now=1_700_000_000.0)
    later = new_report_path("train.py", now=1_700_000_000.5)
    ranks = {new_report_path("train.py", rank=r, now=1_700_000_000.0) for r in range(4)}
    assert first.parent == store and store.is_dir()
    assert oct(store.stat().st_mode & 0o777) == "0o700"
    assert len({first, later, *ranks}) == 6
    assert sorted([later.name, first.name]) == [first.name, later.name]
    assert all(f"-{os.getpid()}-rank" in p.name for p in ranks)


def test_a_script_name_never_leaves_the_folder(store):
    path = new_report_path("../../etc/pa ss\x1bwd;rm.py")
    assert path.parent == store
    assert "/" not in path.name and "\x1b" not in path.name and " " not in path.name


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("DIAGNOSE_REPORT_DIR", str(blocker / "reports"))
    with pytest.raises(StoreError, match="cannot make the report folder"):
        new_report_path("train.py")


def test_prune_keeps_the_newest_and_their_exports(store):
    store.mkdir()
    names = [f"2026010{i}-000000.000-train-1.json" for i in range(1, 7)]
    for name in names:
        (store / name).write_text("{}")
    (store / names[0].replace(".json", ".md")).write_text("export")
    (store / "notes.txt").write_text("not a report")
    assert prune(limit=4) == 2
    assert sorted(p.name for p in store.iterdir()) == sorted([*names[2:], "notes.txt"])
    assert newest() == store / names[-1]


def test_keep_is_bounded(monkeypatch):
    monkeypatch.setenv("DIAGNOSE_REPORTS_KEEP", "0")
    assert keep() == 1
    monkeypatch.setenv("DIAGNOSE_REPORTS_KEEP", "many")
    assert keep() == reportstore.KEEP
    monkeypatch.setenv("DIAGNOSE_REPORTS_KEEP", "9" * 5000)
    assert keep() <= reportstore.MAX_KEEP


def test_every_run_keeps_its_report_and_show_opens_the_newest(store, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(HEALTHY)
    ran = run_cli("--format", "text", str(script))
    assert ran.returncode == 0, ran.stderr
    kept = list(store.glob("*.json"))
    assert len(kept) == 1
    last = ran.stderr.strip().splitlines()[-1]
    assert last == f"diagnose: report kept in {kept[0]} (`diagnose show` opens the newest)"
    assert json.loads(kept[0].read_text())["status"] == "clean"
    shown = run_cli("show")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == ran.stdout.splitlines()[0]


def test_the_folder_is_bounded_after_each_run(store, tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_REPORTS_KEEP", "2")
    store.mkdir()
    for i in range(3):
        (store / f"2020010{i}-000000.000-old-1.json").write_text("{}")
    script = tmp_path / "train.py"
    script.write_text("print('no training')\n")
    ran = run_cli("--format", "json", str(script))
    assert json.loads(ran.stdout)["status"] == "untrained"
    kept = sorted(p.name for p in store.glob("*.json"))
    assert len(kept) == 2 and kept[0] == "20200102-000000.000-old-1.json"
    assert kept[1].endswith(".json") and "-train-" in kept[1]


def test_an_explicit_report_is_the_only_copy(store, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(HEALTHY)
    ran = run_cli("--format", "text", "--report", str(tmp_path / "r.json"), str(script))
    assert ran.returncode == 0 and (tmp_path / "r.json").is_file()
    assert not store.exists() or not list(store.iterdir())


def test_an_unwritable_default_folder_costs_the_copy_not_the_run(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("DIAGNOSE_REPORT_DIR", str(blocker / "reports"))
    script = tmp_path / "train.py"
    script.write_text(HEALTHY)
    ran = run_cli("--format", "text", str(script))
    assert ran.returncode == 0
    assert "diagnose: not keeping this run's report: cannot make the report folder" in ran.stderr
    assert "clean run" in ran.stdout


def test_show_without_a_saved_report_is_one_line(store):
    shown = run_cli("show")
    assert shown.returncode == 2
    assert shown.stderr.strip() == (
        f"diagnose: error: no saved report in {store}: run `diagnose SCRIPT` first"
    )
