"""The warm cache serves the same result as a cold load and never stale data."""

from __future__ import annotations

import json
import os

from diagnose.records import cache, load_records
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
    for entry in private_cache.rglob("*.marshal"):
        entry.write_bytes(b"garbage")
    assert load_records(path).records[0].id == f"{1:016x}"


def test_default_location_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("DIAGNOSE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "diagnose" / "records"
    assert json.dumps(str(cache.cache_dir()))
