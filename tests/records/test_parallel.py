"""A cold load shared among worker processes gives exactly what the serial load gives.

The tests force the parallel path on small inputs (no size threshold, two workers whatever
this machine has) and compare everything a load returns with a serial load of the same input:
records in order, problems with file, line, column, index, JSON path and reason, files, skipped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from diagnose.records import cache, entry, forked, load_records, parallel, split
from tests.conftest import ROOT
from tests.records.factory import record, wrapper, write_json, write_jsonl


def summary(result: Any) -> tuple[Any, ...]:
    return (
        [r.model_dump() for r in result.records],
        [(p.file, p.reason, p.line, p.column, p.index, p.json_path) for p in result.problems],
        list(result.files),
        [(s.file, s.reason) for s in result.skipped],
    )


def serial(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *paths: Path) -> tuple[Any, ...]:
    """The same load in this process alone, with its own cache."""
    with monkeypatch.context() as m:
        m.setattr(parallel, "MIN_BYTES", 1 << 62)
        m.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "serial-cache"))
        return summary(load_records(*paths))


def worker_pids(log: Path) -> list[int]:
    """The pid of each worker that started (from the hook's log)."""
    if not log.exists():
        return []
    return [int(line.split()[0]) for line in log.read_text().splitlines()]


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Any input goes to two workers; each worker notes its pid and task in the returned log."""
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 2)
    log = tmp_path / "workers.log"

    def note(number: int) -> None:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()} {number}\n")

    monkeypatch.setattr(forked, "child_hook", note)
    return log


def assert_workers_ran_and_were_reaped(log: Path, count: int = 2) -> None:
    pids = worker_pids(log)
    assert len(set(pids)) == count and os.getpid() not in pids, pids
    for pid in pids:
        with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
            os.waitpid(pid, os.WNOHANG)


def big_jsonl(path: Path, count: int = 40) -> Path:
    """Good and bad lines in both halves, a duplicate across the halves, blank lines, CRLF, a
    byte order mark, wrappers and bare records mixed."""
    lines = [json.dumps(wrapper(i) if i % 3 else record(i)) for i in range(count)]
    lines[2] = json.dumps(record(2, slug="Not Kebab"))
    lines[5] = "{oops"
    lines[count - 5] = json.dumps(wrapper(count - 5, messagePattern="expected (\\d+ got)) here"))
    lines[count - 3] = json.dumps(record(7))  # the id of line 8, in the other half
    lines[count - 2] = '{"id": "x", "slug" "y"}'
    lines.insert(count // 2, "   ")
    lines.insert(10, "")
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    return path


@pytest.mark.parametrize("part_records", [split.PART_RECORDS, 3])
def test_a_big_jsonl_file_loads_as_serially(
    forced, monkeypatch, tmp_path, private_cache, part_records
):
    monkeypatch.setattr(split, "PART_RECORDS", part_records)  # 3: each worker writes 6 parts
    path = big_jsonl(tmp_path / "big.jsonl")
    expected = serial(monkeypatch, tmp_path, path)
    assert summary(load_records(path)) == expected
    assert_workers_ran_and_were_reaped(forced)
    problems = expected[1]
    assert [line for _, _, line, *_ in problems] == [3, 6, 38, 41, 40], "both halves, real lines"
    assert "duplicate id '0000000000000007' (first at" in problems[4][1]
    [stored] = private_cache.rglob("*.marshal")
    opened = entry.open_entry(stored)
    assert opened is not None and len(opened._parts) == (2 if part_records > 40 else 12)
    assert summary(load_records(path)) == expected, "warm"


def test_the_warm_load_finds_one_entry_of_several_parts(
    forced, monkeypatch, tmp_path, private_cache
):
    path = big_jsonl(tmp_path / "big.jsonl")
    cold = summary(load_records(path))
    [stored] = private_cache.rglob("*.marshal")
    assert not [p for p in private_cache.rglob("*") if p.name.startswith(".tmp-")]
    opened = entry.open_entry(stored)
    assert opened is not None and len(opened._parts) == 2
    warm = load_records(path)
    [segment] = warm.records._segments
    assert isinstance(segment, entry.CachedRecords)
    assert summary(warm) == cold == serial(monkeypatch, tmp_path, path)
    assert (
        warm.records[30] == warm.records[30]
        and warm.records.column("id")[30] == warm.records[30].id
    )


def test_upstream_txt_with_bad_lines_in_both_halves(forced, monkeypatch, tmp_path):
    path = tmp_path / "upstream.txt"
    items = [json.dumps(wrapper(i)) for i in range(30)]
    items[4] = json.dumps(wrapper(4, severity="bad"))
    items[25] = json.dumps(wrapper(25, lineNumber="1"))
    items[27] = json.dumps(wrapper(1))
    path.write_text("\n".join(items) + "\n")
    expected = serial(monkeypatch, tmp_path, path)
    assert summary(load_records(path)) == expected
    assert_workers_ran_and_were_reaped(forced)
    assert [p[2] for p in expected[1]] == [5, 26, 28]


@pytest.mark.parametrize("where", ["first", "second"])
def test_a_file_that_is_not_utf8_is_reported_as_a_whole(forced, monkeypatch, tmp_path, where):
    lines = [json.dumps(record(i)).encode() for i in range(20)]
    lines[3 if where == "first" else 16] = b'{"id": "caf\xe9"}'
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_bytes(b"\n".join(lines) + b"\n")
    txt = tmp_path / "x.txt"
    txt.write_bytes(b"\n".join(lines) + b"\n")
    expected = serial(monkeypatch, tmp_path, jsonl, txt)
    assert summary(load_records(jsonl, txt)) == expected
    assert [p[1].split(":")[0] for p in expected[1]] == ["not UTF-8", "not UTF-8"]
    assert expected[0] == []


def folder_of_files(base: Path) -> Path:
    folder = base / "data"
    (folder / "sub").mkdir(parents=True)
    for k in range(8):
        items = [wrapper(10 * k + i) if i % 2 else record(10 * k + i) for i in range(5)]
        write_json(folder / f"part-{k}.json", items)
    write_json(folder / "part-1.json", [record(10), record(11, slug="Bad Slug"), record(12)])
    write_jsonl(folder / "part-6.jsonl", [record(60), wrapper(10), "oops"])  # 10 again
    (folder / "sub" / "empty.jsonl").write_text("\n")
    (folder / "sub" / "latin1.json").write_bytes(b'{"id":\n"caf\xe9"}')
    (folder / "sub" / "broken.json").write_text('[\n  {"id": "x",\n   "slug" "y"}\n]\n')
    write_json(folder / "sub" / "schema.json", {"$schema": "x"})
    (folder / "notes.md").write_text("notes")
    return folder


def test_a_folder_loads_as_serially(forced, monkeypatch, tmp_path, private_cache):
    folder = folder_of_files(tmp_path)
    expected = serial(monkeypatch, tmp_path, folder)
    assert summary(load_records(folder)) == expected
    assert_workers_ran_and_were_reaped(forced, count=4)  # two for the files, two for the .jsonl
    reasons = [p[1] for p in expected[1]]
    assert any(r.startswith("duplicate id '000000000000000a'") for r in reasons)
    assert any(r.startswith("not UTF-8") for r in reasons) and "empty file: no records" in reasons
    assert summary(load_records(folder)) == expected, "warm"


def test_a_warm_folder_forks_nothing(forced, tmp_path):
    folder = folder_of_files(tmp_path)
    load_records(folder)
    forced.unlink()
    load_records(folder)
    assert worker_pids(forced) == []


def test_with_the_cache_off_nothing_is_left_behind(forced, monkeypatch, tmp_path):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", "off")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path, folder = big_jsonl(tmp_path / "big.jsonl"), folder_of_files(tmp_path)
    expected = serial(monkeypatch, tmp_path, path, folder)
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", "off")
    assert summary(load_records(path, folder)) == expected
    assert len(worker_pids(forced)) == 6
    assert list(scratch.iterdir()) == []
    assert cache.cache_dir() is None


def failing_hook(log: Path, how: str):
    def hook(number: int) -> None:
        with log.open("a") as fh:
            fh.write(f"{os.getpid()} {number}\n")
        if number != 1:
            return
        if how == "raise":
            raise RuntimeError("worker failed")
        if how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if how == "exit":
            os._exit(0)  # leaves without a reply
        if how == "hang":
            time.sleep(60)

    return hook


@pytest.mark.parametrize("how", ["raise", "kill", "exit", "hang"])
def test_work_a_worker_does_not_deliver_is_done_by_the_parent(forced, monkeypatch, tmp_path, how):
    monkeypatch.setattr(forked, "child_hook", failing_hook(forced, how))
    monkeypatch.setattr(parallel, "TIMEOUT_BASE_S", 1.0)
    path, folder = big_jsonl(tmp_path / "big.jsonl"), folder_of_files(tmp_path)
    expected = serial(monkeypatch, tmp_path, path, folder)
    started = time.monotonic()
    assert summary(load_records(path, folder)) == expected
    assert time.monotonic() - started < 10
    assert_workers_ran_and_were_reaped(forced, count=6)  # 2 for each .jsonl, 2 for the rest
    assert summary(load_records(path, folder)) == expected, "warm"


class Interrupted(Exception):
    pass


def test_an_interrupted_load_leaves_no_worker_and_no_file_behind(
    forced, monkeypatch, tmp_path, private_cache
):
    """The parent interrupted while it waits (here by a timer; Ctrl-C alike): every worker is
    killed and reaped, and no temporary entry is left."""
    monkeypatch.setattr(forked, "child_hook", failing_hook(forced, "hang"))
    path = big_jsonl(tmp_path / "big.jsonl")

    def interrupt(signum: int, frame: Any) -> None:
        raise Interrupted

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(Interrupted):
            load_records(path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert_workers_ran_and_were_reaped(forced)
    assert [p.name for p in private_cache.rglob("*") if p.is_file()] == []


def test_a_racy_entry_is_still_verified_by_content(forced, monkeypatch, tmp_path):
    """An entry written by workers for a file changed within the clock tick keeps its hash:
    a rewrite with identical stamps is seen."""
    path = big_jsonl(tmp_path / "big.jsonl")
    before = load_records(path)
    assert before.records[0].slug == "test-record-0"
    frozen = cache.signature(os.stat(path))
    monkeypatch.setattr(cache, "signature", lambda st: frozen)
    path.write_bytes(path.read_bytes().replace(b"test-record-", b"test-rekord-"))
    after = load_records(path)
    assert after.records[0].slug == "test-rekord-0"
    assert summary(after) == serial(monkeypatch, tmp_path, path)


_STAT_EXTRA = (
    "st_atime",
    "st_mtime",
    "st_ctime",
    "st_atime_ns",
    "st_mtime_ns",
    "st_ctime_ns",
    "st_blksize",
    "st_blocks",
    "st_rdev",
)


def test_a_file_changed_while_read_is_not_stored(forced, monkeypatch, tmp_path, private_cache):
    path = big_jsonl(tmp_path / "big.jsonl")
    from diagnose.records import loader

    real_stat, real_read = Path.stat, loader.read_bytes
    reads = []

    def reading(where: Path, cap: int) -> bytes:
        reads.append(Path(where))
        return real_read(where, cap)

    def changing_stat(self: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        st = real_stat(self, *args, **kwargs)
        if reads == [path]:  # the stat after reading: the file looks rewritten meanwhile
            later = {name: getattr(st, name) for name in _STAT_EXTRA}
            later["st_mtime_ns"] += 10**9
            return os.stat_result(tuple(st), later)
        return st

    monkeypatch.setattr(loader, "read_bytes", reading)
    monkeypatch.setattr(Path, "stat", changing_stat)
    assert summary(load_records(path)) == serial(monkeypatch, tmp_path, path)
    assert len(worker_pids(forced)) == 2
    assert not list(private_cache.rglob("*.marshal")), "nothing stored for a file in flux"


_IN_A_PROGRAM = """
import atexit, os, sys, threading
sys.path.insert(0, {root!r})
if {torch!r}:
    import torch
    torch.set_num_threads(2)
    stop = threading.Event()
    def spin():
        x = torch.randn(128, 128)
        while not stop.is_set():
            x = torch.tanh(x @ x)
    threads = [threading.Thread(target=spin, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
from diagnose.records import forked, load_records, parallel
def summary(r):
    return [[x.model_dump() for x in r.records], [str(p) for p in r.problems]]
atexit.register(lambda: print("atexit ran"))
print("before", end="")  # buffered: a worker that flushed it on exit would print it again
parallel.MIN_BYTES = 1 << 62
expected = summary(load_records(*sys.argv[1:]))
parallel.MIN_BYTES, parallel.usable_cpus = 0, lambda: 2
os.environ["DIAGNOSE_CACHE_DIR"] += "-parallel"  # a cold load again
def note(number):
    with open({log!r}, "a") as fh:
        fh.write(f"{{os.getpid()}} {{number}}\\n")
forked.child_hook = note
got = summary(load_records(*sys.argv[1:]))
print(" same" if got == expected else " DIFFERENT", len(got[0]), len(got[1]))
if {torch!r}:
    stop.set()
    for t in threads:  # a daemon thread still inside a torch op at exit can abort the process
        t.join()
"""


def run_program(tmp_path: Path, torch: bool) -> str:
    paths = [big_jsonl(tmp_path / "big.jsonl"), folder_of_files(tmp_path)]
    env = {**os.environ, "DIAGNOSE_CACHE_DIR": str(tmp_path / "program-cache")}
    env.pop("PYTHONUNBUFFERED", None)  # stdout buffered, as in a program writing to a pipe
    log = tmp_path / "workers.log"
    code = _IN_A_PROGRAM.format(root=str(ROOT), torch=torch, log=str(log))
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, paths)],
        env=env,
        timeout=300,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(set(worker_pids(log))) == 6, "two for each .jsonl file, two for the rest"
    return done.stdout


def test_workers_run_no_atexit_handler_and_flush_no_stdio_twice(tmp_path):
    assert run_program(tmp_path, torch=False) == "before same 56 28\natexit ran\n"


@pytest.mark.slow
def test_a_program_with_torch_and_threads_running_loads_the_same(tmp_path):
    assert run_program(tmp_path, torch=True) == "before same 56 28\natexit ran\n"
