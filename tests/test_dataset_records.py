"""The shipped error-knowledge dataset: every record is well formed and its pattern is exact.

A record's ``messagePattern`` is what the matcher trusts first, so each one must
recognise its own message in every shape the library prints it (other ops, shapes,
dtypes, devices, numbers: see ``dataset/variants.json``) and must never claim a
message that belongs to another record.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECORDS_DIR = ROOT / "dataset" / "records"
VARIANTS_FILE = ROOT / "dataset" / "variants.json"
NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+]\)[*+{]")


def _load() -> list[tuple[str, dict]]:
    """Read every record file as the upstream wrapper ``{"record": ..., "datasetVersion": ...}``."""
    loaded = []
    for path in sorted(RECORDS_DIR.glob("*.json")):
        wrapper = json.loads(path.read_text(encoding="utf-8"))
        loaded.append((path.name, wrapper["record"]))
    return loaded


RECORDS = _load()
BY_SLUG = {record["slug"]: record for _, record in RECORDS}
VARIANTS: dict[str, list[str]] = json.loads(VARIANTS_FILE.read_text(encoding="utf-8"))


def _matching_slugs(message: str) -> list[str]:
    return [slug for slug, r in BY_SLUG.items() if re.search(r["messagePattern"], message)]


def test_dataset_has_at_least_forty_records() -> None:
    assert len(RECORDS) >= 40


def test_ids_and_slugs_are_unique() -> None:
    ids = [r["id"] for _, r in RECORDS]
    slugs = [r["slug"] for _, r in RECORDS]
    assert len(set(ids)) == len(ids)
    assert len(set(slugs)) == len(slugs)


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_file_name_carries_the_slug(name: str, record: dict) -> None:
    assert re.fullmatch(r"\d{3}_" + re.escape(record["slug"]) + r"\.json", name)


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_record_shape_follows_the_upstream_format(name: str, record: dict) -> None:
    assert record["schemaVersion"] == 2
    assert re.fullmatch(r"[0-9a-f]{16}", record["id"])
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", record["slug"])
    assert record["severity"] in {"error", "warning"}
    assert record["errorType"] in {"exception", "warning", "log"}
    assert all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", t) for t in record["tags"])
    assert record["solutions"] and record["preventionTips"]
    assert "# before" in record["exampleFix"] and "# after" in record["exampleFix"]
    sha = record["analyzedSha"]
    assert sha is None or re.fullmatch(r"[0-9a-f]{40}", sha)
    url = record["githubUrl"]
    if url is not None:
        assert url.startswith(
            f"https://github.com/{record['repo']}/blob/{sha}/{record['filePath']}"
        )
    start, line, end = record["sourceCodeStart"], record["lineNumber"], record["sourceCodeEnd"]
    if None not in (start, line, end):
        assert start <= line <= end
        assert url.endswith(f"#L{start}-L{end}")
        assert record["sourceCode"].count("\n") == end - start


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_pattern_compiles_is_linear_and_matches_its_own_message(name: str, record: dict) -> None:
    pattern = record["messagePattern"]
    re.compile(pattern)
    assert not NESTED_QUANTIFIER.search(pattern), "nested quantifier can backtrack badly"
    assert re.search(pattern, record["errorMessage"])


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_pattern_matches_no_other_records_message(name: str, record: dict) -> None:
    others = [
        r["slug"]
        for _, r in RECORDS
        if r is not record and re.search(record["messagePattern"], r["errorMessage"])
    ]
    assert others == []


def test_every_record_has_a_variants_entry() -> None:
    assert set(VARIANTS) == set(BY_SLUG)


@pytest.mark.parametrize(
    ("slug", "message"),
    [(slug, message) for slug, messages in VARIANTS.items() for message in messages],
)
def test_real_variant_messages_match_only_their_own_record(slug: str, message: str) -> None:
    assert _matching_slugs(message) == [slug]


def test_the_project_loader_accepts_every_record_without_problems() -> None:
    import diagnose

    result = diagnose.load_records(RECORDS_DIR)
    assert result.problems == []
    assert sorted(r.slug for r in result.records) == sorted(BY_SLUG)


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_cited_lines_come_with_file_commit_and_code(name: str, record: dict) -> None:
    """A line range is only meaningful for one file at one commit, with the code it shows."""
    lines = (record["sourceCodeStart"], record["lineNumber"], record["sourceCodeEnd"])
    if all(value is None for value in lines):
        return
    assert None not in lines, "line facts are all filled or all null"
    assert record["filePath"] and record["analyzedSha"] and record["sourceCode"]
    assert record["githubUrl"] is not None


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_a_line_anchor_in_the_url_comes_with_its_lines(name: str, record: dict) -> None:
    """``#L...`` in ``githubUrl`` claims a line: the record then states it and shows its code.

    A URL anchored at a line the record does not give (no lineNumber, no code) points readers
    at text nobody checked; such a record cites the file at its commit, without an anchor.
    """
    url = record["githubUrl"] or ""
    if "#L" not in url:
        return
    assert record["lineNumber"] is not None, f"{url} has a line anchor but no lineNumber"
    assert record["sourceCode"], f"{url} has a line anchor but no sourceCode"
    assert url.endswith(f"#L{record['sourceCodeStart']}-L{record['sourceCodeEnd']}")


@pytest.mark.parametrize(("name", "record"), RECORDS, ids=[n for n, _ in RECORDS])
def test_a_shipped_record_is_never_a_skeleton(name: str, record: dict) -> None:
    # `diagnose dataset mine` writes skeletons: exact facts, a `skeleton` tag and SKELETON:
    # placeholders where the text goes; a record ships only once its text is written
    assert "skeleton" not in record["tags"]
    assert "SKELETON:" not in json.dumps(record)
    assert record["documentation"] and record["documentation"].strip()
