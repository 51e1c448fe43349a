"""The warm cache serves the same result as a cold load and never stale data."""

from __future__ import annotations

import json
import os
import time

from diagnose.records import cache, entry, load_records
from tests.records.factory import record, write_jsonl


def test_warm_load_equals_cold_load(tmp_path, private_cache):
    path = write_jsonl(tmp_path / "x.jsonl", [record(i) for i in range(5)] + ["oops"])
    cold = load_records(path)
    assert any(private_cache.iterdir()), "the cold load wrote a cache entry"
    warm = load_records(path)
    assert [r.model_dump() for r in warm.records] == [r.model_dump() for r in cold.records]
    assert [str(p) for p in warm.problems] == [str(p) for p in cold.problems]
    assert warm.records[0].messagePattern == cold.records[0].messagePattern


def test_same_size_and_mtime_rewrite_is_seen(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(1, slug="first-slug")])
    before = os.stat(path)
    assert load_records(path).records[0].slug == "first-slug"
    path.write_text(path.read_text().replace("first-slug", "other-slug"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns
    assert load_records(path).records[0].slug == "other-slug"


def test_racy_entry_is_verified_by_content(tmp_path, monkeypatch):
    """Even identical stamps (a write in the same clock tick) cannot serve stale records."""
    path = write_jsonl(tmp_path / "x.jsonl", [record(1, slug="first-slug")])
    load_records(path)
    real_signature = cache.signature
    frozen = real_signature(os.stat(path))
    monkeypatch.setattr(cache, "signature", lambda st: frozen)  # stamps that never change
    path.write_text(path.read_text().replace("first-slug", "other-slug"))
    assert load_records(path).records[0].slug == "other-slug"


def test_old_files_are_trusted_by_stamps_alone(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(1)])
    old = os.stat(path).st_mtime_ns - 10 * cache.RACY_NS
    os.utime(path, ns=(old, old))
    st = os.stat(path)
    assert not cache.is_racy(st, read_started_ns=max(st.st_ctime_ns, old) + 3 * cache.RACY_NS)
    assert cache.is_racy(st, read_started_ns=st.st_ctime_ns)


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", "off")
    assert cache.cache_dir() is None
    path = write_jsonl(tmp_path / "x.jsonl", [record(1)])
    assert load_records(path).ok


def test_a_corrupt_cache_entry_is_ignored(tmp_path, private_cache):
    path = write_jsonl(tmp_path / "x.jsonl", [record(1)])
    load_records(path)
    for entry_file in private_cache.rglob("*.marshal"):
        entry_file.write_bytes(b"garbage")
    assert load_records(path).records[0].id == f"{1:016x}"


def test_default_location_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("DIAGNOSE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "diagnose" / "records"
    assert json.dumps(str(cache.cache_dir()))


def test_a_warm_load_builds_records_only_when_read(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(i) for i in range(200)])
    cold = load_records(path)
    warm = load_records(path).records
    [segment] = warm._segments
    assert isinstance(segment, entry.CachedRecords)
    assert warm.column("id") == [r.id for r in cold.records]
    assert warm.column("messagePattern") == [r.messagePattern for r in cold.records]
    assert segment._built.count(None) == 200, "columns need no model"
    assert warm[130] == cold.records[130]
    assert segment._built.count(None) == 200 - entry.BLOCK, "one block was built"
    assert warm[130] is warm[130]
    assert list(warm) == list(cold.records)


def test_a_lazy_result_keeps_the_content_it_was_checked_against(tmp_path, monkeypatch):
    """An entry replaced by a newer one (the file changed) does not leak into an older result,
    also when entries are memory-mapped."""
    monkeypatch.setattr(entry, "MMAP_MIN", 0)
    path = write_jsonl(tmp_path / "x.jsonl", [record(i, slug=f"old-{i}") for i in range(100)])
    load_records(path)
    before = load_records(path).records  # warm, nothing built yet
    path.write_text(path.read_text().replace('"old-', '"new-'))
    load_records(path)  # cold: stores a new entry over the old one
    after = load_records(path).records
    assert [r.slug for r in before] == [f"old-{i}" for i in range(100)]
    assert [r.slug for r in after] == [f"new-{i}" for i in range(100)]


def test_a_truncated_cache_entry_is_ignored(tmp_path, private_cache):
    path = write_jsonl(tmp_path / "x.jsonl", [record(i) for i in range(100)])
    load_records(path)
    [entry_file] = private_cache.rglob("*.marshal")
    entry_file.write_bytes(entry_file.read_bytes()[:-10])
    result = load_records(path)
    assert [r.id for r in result.records] == [f"{i:016x}" for i in range(100)]


def test_warm_duplicates_are_reported_as_cold_ones(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [record(1), record(2)])
    b = write_jsonl(tmp_path / "b.jsonl", [record(3), record(1)])
    cold = load_records(a, b)
    warm = load_records(a, b)
    assert (
        [str(p) for p in warm.problems]
        == [str(p) for p in cold.problems]
        == [f"{b}:2 $.id: duplicate id '0000000000000001' (first at {a}:1)"]
    )
    assert [r.id for r in warm.records] == [r.id for r in cold.records]


def _entries(folder):
    return sorted(folder.glob("*.marshal"))


def test_the_cache_keeps_to_its_entry_bound(tmp_path, private_cache, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_MAX_ENTRIES", "4")
    paths = [write_jsonl(tmp_path / f"f{i}.jsonl", [record(i)]) for i in range(12)]
    for path in paths:
        load_records(path)
        assert len(_entries(private_cache / "records")) <= 4
    kept = {p.name for p in _entries(private_cache / "records")}
    assert cache.entry_target(paths[-1]).name in kept, "the newest entry stays"


def test_the_least_recently_used_entry_goes_first(tmp_path, private_cache, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_MAX_ENTRIES", "3")
    a, b, c, d = (write_jsonl(tmp_path / f"{n}.jsonl", [record(i)]) for i, n in enumerate("abcd"))
    for path in (a, b, c):
        load_records(path)
    hours_ago = time.time() - 3 * cache.TOUCH_S
    for i, path in enumerate((a, b, c)):  # written long ago, a first
        os.utime(cache.entry_target(path), (hours_ago + i, hours_ago + i))
    assert load_records(a).records[0].id == f"{0:016x}"  # a warm hit: a is used again now
    load_records(d)
    left = {p.name for p in _entries(private_cache / "records")}
    assert left == {cache.entry_target(p).name for p in (a, c, d)}, "b was the least recently used"


def test_the_cache_keeps_to_its_size_bound(tmp_path, private_cache, monkeypatch):
    paths = [
        write_jsonl(tmp_path / f"f{i}.jsonl", [record(j) for j in range(i * 50, i * 50 + 50)])
        for i in range(6)
    ]
    load_records(paths[0])
    one = cache.entry_target(paths[0]).stat().st_size
    monkeypatch.setenv("DIAGNOSE_CACHE_MAX_MB", str(2.5 * one / (1024 * 1024)))
    for path in paths[1:]:
        load_records(path)
    sizes = [p.stat().st_size for p in _entries(private_cache / "records")]
    assert sum(sizes) <= 2.5 * one and len(sizes) == 2


def test_temporary_files_left_by_a_dead_writer_are_removed(tmp_path, private_cache, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_MAX_ENTRIES", "1")
    folder = private_cache / "records"
    folder.mkdir(parents=True)
    stale, fresh = folder / ".tmp-1-2-3", folder / ".tmp-4-5-6"
    stale.write_bytes(b"half an entry")
    fresh.write_bytes(b"being written")
    old = time.time() - 2 * cache.STALE_TMP_S
    os.utime(stale, (old, old))
    for i in range(3):
        load_records(write_jsonl(tmp_path / f"f{i}.jsonl", [record(i)]))
    assert not stale.exists() and fresh.exists()
