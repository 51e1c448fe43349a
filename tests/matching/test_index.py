"""The saved record index of ``diagnose match``: the same answer as a fresh load, rebuilt when
an input or the code changes, never trusted when damaged, and read without pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from diagnose.matcher import Matcher
from diagnose.matching import index as match_index
from tests.conftest import ROOT, run_cli
from tests.records.factory import record, write_jsonl

GRADSCALER = """\
Traceback (most recent call last):
  File "finetune.py", line 112, in <module>
    scaler.unscale_(optimizer)
ValueError: Attempting to unscale FP16 gradients.
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache folder, and indexes stored even for inputs written a moment ago."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(folder))
    monkeypatch.setattr(match_index, "RACY_NS", 0)
    return folder


def _files(cache) -> list:
    return sorted((cache / "match").glob("*.index"))


def test_a_saved_index_gives_what_a_fresh_build_gives(cache):
    built = match_index.build()
    first = match_index.load_index()
    [saved] = _files(cache)
    again = match_index.load_index()
    assert again == first == built
    assert saved.stat().st_mtime_ns == _files(cache)[0].stat().st_mtime_ns  # read, not rewritten


def test_matches_from_the_index_equal_matches_from_the_loaded_models(cache):
    from diagnose.records import load_records

    index = match_index.load_index()
    from_models = Matcher(load_records().records).search(GRADSCALER)
    from_index = Matcher(index.records, literals=index.literals).search(GRADSCALER)
    assert [m.to_dict() for m in from_index.matches] == [m.to_dict() for m in from_models.matches]
    assert from_index.matches[0].slug == "gradscaler-attempting-to-unscale-fp16-gradients"


def test_a_changed_dataset_file_is_seen_at_once(cache, tmp_path):
    extra = write_jsonl(tmp_path / "mine.jsonl", [record(1, slug="first-wording")])
    assert "first-wording" in {r["slug"] for r in match_index.load_index([extra]).records}
    write_jsonl(extra, [record(1, slug="second-wording"), record(2)])
    slugs = {r["slug"] for r in match_index.load_index([extra]).records}
    assert "second-wording" in slugs and "first-wording" not in slugs
    assert "test-record-2" in slugs


def test_a_file_added_to_a_dataset_folder_is_seen(cache, tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", [record(1)])
    assert (
        len(match_index.load_index([folder]).records) == len(match_index.load_index().records) + 1
    )
    write_jsonl(folder / "b.jsonl", [record(2)])
    assert "test-record-2" in {r["slug"] for r in match_index.load_index([folder]).records}


def test_a_user_record_wins_over_a_shipped_one_with_its_id(cache, tmp_path):
    shipped = match_index.load_index().records[0]
    mine = record(0, id=shipped["id"], slug="my-own-words")
    extra = write_jsonl(tmp_path / "mine.jsonl", [mine])
    rows = match_index.load_index([extra]).records
    assert [r["slug"] for r in rows if r["id"] == shipped["id"]] == ["my-own-words"]


def test_load_problems_are_kept_in_the_index_and_told_again(cache, tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [record(3, slug="Not Kebab")])
    first = match_index.load_index([bad]).problems
    assert first and "bad.jsonl" in first[0]
    assert match_index.load_index([bad]).problems == first


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",
        lambda data: data[: len(data) // 2],
        lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]),
        lambda data: b"NOTOURS!" + data[8:],
        lambda data: data[:12] + b"\x00" * (len(data) - 12),
        lambda data: os.urandom(len(data)),
    ],
    ids=["empty", "truncated", "flipped-byte", "foreign-magic", "zeroed", "random"],
)
def test_a_damaged_index_is_rebuilt_never_trusted(cache, damage):
    good = match_index.load_index()
    [saved] = _files(cache)
    saved.write_bytes(damage(saved.read_bytes()))
    assert match_index.load_index() == good
    assert match_index.load_index() == good  # and it was written whole again


def test_a_well_formed_index_of_another_shape_is_not_used(cache):
    good = match_index.load_index()
    [saved] = _files(cache)
    key, _newest = match_index._signature([match_index.records_dir()])
    import marshal
    import zlib

    payload = marshal.dumps((key, [{"id": "x"}], [], [None]))
    saved.write_bytes(match_index.MAGIC + zlib.crc32(payload).to_bytes(4, "little") + payload)
    assert match_index.load_index() == good


def test_an_index_is_not_stored_while_its_inputs_are_in_the_same_clock_tick(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))
    extra = write_jsonl(tmp_path / "mine.jsonl", [record(1)])
    match_index.load_index([extra])
    assert not list((tmp_path / "cache" / "match").glob("*.index"))


def test_caching_off_still_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", "off")
    assert match_index.load_index() == match_index.build()


def test_only_the_newest_indexes_are_kept(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(match_index, "KEEP", 3)
    for i in range(5):
        match_index.load_index([write_jsonl(tmp_path / f"d{i}.jsonl", [record(i)])])
    assert len(_files(cache)) == 3


def test_a_warm_match_run_imports_neither_pydantic_nor_torch_nor_the_run_command(tmp_path):
    env = {**os.environ, "DIAGNOSE_CACHE_DIR": str(tmp_path / "cache")}
    code = (
        "import sys\n"
        "from diagnose.cli import main\n"
        "status = main(['match', '--format', 'json', '--message', sys.argv[1]])\n"
        "heavy = ('pydantic', 'torch', 'yaml', 'diagnose.commands.run', 'diagnose.report',"
        " 'diagnose.tracer', 'diagnose.records.models', 'rapidfuzz', 'importlib.metadata')\n"
        "print(status, sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    message = "ValueError: Attempting to unscale FP16 gradients."
    for _ in range(2):  # the first builds the index (one clock tick after the dataset's change)
        done = subprocess.run(
            [sys.executable, "-c", code, message],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "0 []"
    slug = json.loads(done.stdout)["matches"][0]["slug"]
    assert slug == "gradscaler-attempting-to-unscale-fp16-gradients"


def test_the_cli_answers_alike_with_the_cache_off_and_warm(tmp_path, monkeypatch):
    outputs = []
    for setting in ("off", str(tmp_path / "cache"), str(tmp_path / "cache")):
        monkeypatch.setenv("DIAGNOSE_CACHE_DIR", setting)
        done = run_cli("match", "--format", "json", "-", stdin=GRADSCALER)
        outputs.append((done.returncode, done.stdout, done.stderr))
    assert outputs[0] == outputs[1] == outputs[2]
