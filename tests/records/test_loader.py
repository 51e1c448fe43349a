"""load_records: every input shape loads, every problem is reported with its exact location."""

from __future__ import annotations

import gc
import json
import os

import diagnose
from diagnose.records import ErrorRecord, LoadResult, load_records
from tests.conftest import SEED
from tests.records.factory import record, wrapper, write_json, write_jsonl


def lines(result: LoadResult) -> list[str]:
    return [str(p) for p in result.problems]


def test_the_upstream_sample_loads_unchanged():
    result = load_records(SEED)
    assert result.ok, lines(result)
    [rec] = result.records
    assert isinstance(rec, ErrorRecord)
    assert rec.id == "1e92004800b7520d"
    assert rec.errorClass == "ValueError"
    assert rec.solutions[0].startswith("Read the frame dump")


def test_public_api_is_exported_lazily():
    assert diagnose.load_records is load_records
    assert diagnose.LoadResult is LoadResult


def test_reads_each_shape(tmp_path):
    write_json(tmp_path / "wrapper.json", wrapper(1))
    write_json(tmp_path / "bare.json", record(2))
    write_json(tmp_path / "array.json", [wrapper(3), record(4)])
    write_jsonl(tmp_path / "lines.jsonl", [record(5), wrapper(6)])
    (tmp_path / "upstream.txt").write_text(json.dumps(wrapper(7)) + "\n" + json.dumps(wrapper(8)))
    paths = sorted(tmp_path.glob("*.*"))
    result = load_records(*paths)
    assert result.ok, lines(result)
    assert sorted(int(r.id, 16) for r in result.records) == list(range(1, 9))


def test_records_keep_file_order(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(i) for i in (5, 3, 9)])
    assert [r.id for r in load_records(path).records] == [f"{i:016x}" for i in (5, 3, 9)]


def test_folders_are_read_recursively_and_non_records_are_skipped(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    write_json(tmp_path / "a" / "b" / "deep.json", wrapper(1))
    write_jsonl(tmp_path / "a" / "top.jsonl", [record(2)])
    write_json(
        tmp_path / "schema.json", {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    )
    write_json(tmp_path / "variants.json", {"some-slug": ["a message"]})
    (tmp_path / "README.md").write_text("# notes\n")
    (tmp_path / "notes.txt").write_text("not json\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.json").write_text("{broken")
    result = load_records(tmp_path)
    assert result.ok, lines(result)
    assert {r.id for r in result.records} == {f"{1:016x}", f"{2:016x}"}
    skipped = {os.path.basename(s.file): s.reason for s in result.skipped}
    assert skipped["schema.json"] == "a JSON Schema, not error records"
    assert skipped["variants.json"] == "a JSON object without any error-record field"
    assert set(skipped) == {"schema.json", "variants.json", "README.md", "notes.txt"}


def test_a_bad_record_in_jsonl_is_located_and_the_good_ones_still_load(tmp_path):
    items = [wrapper(i) for i in range(20)]
    items[16]["record"]["messagePattern"] = "expected (\\d+ got)) here"
    path = write_jsonl(tmp_path / "x.jsonl", items)
    result = load_records(path)
    assert lines(result) == [
        f"{path}:17 $.record.messagePattern: unbalanced parenthesis at position 18"
    ]
    assert len(result.records) == 19
    problem = result.problems[0]
    assert (problem.line, problem.index, problem.json_path) == (17, None, "$.record.messagePattern")


def test_a_bad_item_in_an_array_is_located_by_index(tmp_path):
    path = write_json(tmp_path / "x.json", [record(0), record(1, slug="Not Kebab"), record(2)])
    result = load_records(path)
    assert lines(result) == [
        f'{path}[1] $.slug: "Not Kebab" does not match ^[a-z0-9]+(?:-[a-z0-9]+)*$'
    ]
    assert len(result.records) == 2


def test_schema_errors_name_each_field(tmp_path):
    bad = record(0, schemaVersion=3, analyzedSha="abc", lineNumber="282", extra=1)
    del bad["solutions"]
    result = load_records(write_json(tmp_path / "x.json", bad))
    got = {p.json_path: p.reason for p in result.problems}
    assert got == {
        "$.schemaVersion": "must be 2, got 3",
        "$.analyzedSha": '"abc" does not match ^[0-9a-f]{40}$',
        "$.lineNumber": "expected integer or null, got string",
        "$.extra": "unknown field (not in schemaVersion 2)",
        "$.solutions": "required field is missing",
    }


def test_line_order_rule(tmp_path):
    path = write_json(tmp_path / "x.json", wrapper(0, lineNumber=250))
    assert lines(load_records(path)) == [
        f"{path} $.record.lineNumber: lineNumber 250 is before sourceCodeStart 264"
    ]


def test_malformed_json_has_line_and_column(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('[\n  {"id": "x",\n   "slug" "y"}\n]\n')
    assert lines(load_records(path)) == [f"{path}:3:11: malformed JSON: Expecting ':' delimiter"]


def test_malformed_jsonl_line_does_not_hide_the_others(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(record(1)) + "\n{oops\n" + json.dumps(record(2)) + "\n")
    result = load_records(path)
    assert lines(result) == [
        f"{path}:2:2: malformed JSON: Expecting property name enclosed in double quotes"
    ]
    assert len(result.records) == 2


def test_duplicate_ids_report_both_locations(tmp_path):
    a = write_json(tmp_path / "a.json", [record(1), record(2)])
    b = write_jsonl(tmp_path / "b.jsonl", [record(3), record(2)])
    result = load_records(a, b)
    assert lines(result) == [f"{b}:2 $.id: duplicate id '0000000000000002' (first at {a}[1])"]
    assert [r.id[-1] for r in result.records] == ["1", "2", "3"]


def test_not_utf8(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b'{"id":\n"caf\xe9"}')
    assert lines(load_records(path)) == [
        f"{path}:2: not UTF-8: invalid continuation byte 0xe9 at byte 11"
    ]


def test_empty_file_and_empty_folder_and_missing_path(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.md").write_text("hello")
    missing = tmp_path / "missing.json"
    result = load_records(empty, folder, missing)
    assert lines(result) == [
        f"{empty}: empty file: no records",
        f"{folder}: folder holds no records (skipped 1 file)",
        f"{missing}: no such file or folder",
    ]


def test_not_an_object(tmp_path):
    path = write_json(tmp_path / "x.json", [record(1), 5])
    assert lines(load_records(path)) == [
        f"{path}[1] $: expected an error record or a wrapper object, got integer"
    ]


def test_relative_paths_are_shown_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_json(tmp_path / "x.json", record(1, severity="bad"))
    result = load_records("x.json")
    assert str(result.problems[0]).startswith("x.json $.severity: must be one of")


def test_no_paths_loads_the_shipped_dataset():
    result = load_records()
    assert result.files, "the shipped dataset has record files"
    assert result.ok, lines(result)[:5]
    assert len(result.records) > 0


def test_jsonl_line_numbers_count_blank_lines_crlf_and_a_byte_order_mark(tmp_path):
    path = tmp_path / "x.jsonl"
    body = "\r\n".join(["", json.dumps(record(1)), "   ", json.dumps(record(2, severity="x"))])
    path.write_bytes(b"\xef\xbb\xbf" + body.encode() + b"\r\n")
    result = load_records(path)
    assert [str(p).split(" $")[0] for p in result.problems] == [f"{path}:4"]
    assert [r.id for r in result.records] == [f"{1:016x}"]


def test_wrappers_and_bare_records_may_be_mixed_in_one_file(tmp_path):
    jsonl = write_jsonl(tmp_path / "mixed.jsonl", [record(1), wrapper(2), record(3)])
    array = write_json(tmp_path / "mixed.json", [wrapper(4), record(5), wrapper(6)])
    result = load_records(jsonl, array)
    assert result.ok, lines(result)
    assert [int(r.id, 16) for r in result.records] == [1, 2, 3, 4, 5, 6]


def test_a_record_split_over_two_lines_is_malformed_on_both(tmp_path):
    """Each line of JSON Lines is one value: lines that would only make sense joined are not."""
    text = json.dumps(record(1, tags=["a", "b"]))
    first, second = text.split('"a", ', 1)
    path = tmp_path / "x.jsonl"
    path.write_text(f'{first}"a"\n{second}\n' + json.dumps(record(2)) + "\n")
    result = load_records(path)
    assert [(p.line, p.reason.split(":")[0]) for p in result.problems] == [
        (1, "malformed JSON"),
        (2, "malformed JSON"),
    ]
    assert [r.id for r in result.records] == [f"{2:016x}"]


def test_a_jsonl_file_that_is_not_utf8_loads_nothing(tmp_path):
    path = tmp_path / "x.jsonl"
    good = json.dumps(record(1)).encode()
    path.write_bytes(b"\xef\xbb\xbf" + good + b'\n{"id": "caf\xe9"}\n')
    result = load_records(path)
    assert lines(result) == [
        f"{path}:2: not UTF-8: invalid continuation byte 0xe9 at byte {3 + len(good) + 12}"
    ]
    assert len(result.records) == 0


def test_an_empty_array_is_reported(tmp_path):
    path = write_json(tmp_path / "x.json", [])
    assert lines(load_records(path)) == [f"{path} $: empty array: no records"]


def test_upstream_txt_with_one_wrapper_per_line(tmp_path):
    path = tmp_path / "upstream.txt"
    path.write_text("\n".join(json.dumps(wrapper(i)) for i in range(3)) + "\n")
    result = load_records(path)
    assert result.ok, lines(result)
    assert [int(r.id, 16) for r in result.records] == [0, 1, 2]


def test_integral_floats_are_integers_and_bools_are_not(tmp_path):
    ok = write_json(tmp_path / "ok.json", record(1, lineNumber=282.0, schemaVersion=2.0))
    [rec] = load_records(ok).records
    assert rec.lineNumber == 282 and type(rec.lineNumber) is int
    assert rec.schemaVersion == 2 and type(rec.schemaVersion) is int
    bad = write_json(tmp_path / "bad.json", record(1, lineNumber=True))
    assert [p.json_path for p in load_records(bad).problems] == ["$.lineNumber"]


def test_records_are_a_read_only_sequence_with_cheap_columns(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(i) for i in range(3)])
    records = load_records(path).records
    assert records.column("id") == [r.id for r in records] == [f"{i:016x}" for i in range(3)]
    assert records[-1].id == records[2].id and records[0:2] == list(records)[:2]
    assert not hasattr(records, "append")


def test_loading_leaves_the_gc_as_it_found_it(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [record(1)])
    assert gc.isenabled()
    load_records(path)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.disable()
    try:
        load_records(path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()  # a program that froze its objects (e.g. before forking) keeps them frozen
    try:
        frozen = gc.get_freeze_count()
        load_records(path)
        # neither unfrozen (0) nor frozen again (more); a frozen object that another thread
        # of the process lets go of meanwhile leaves the permanent generation by itself
        assert 0 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()


def test_record_shaped_text_inside_values_does_not_confuse_the_shape(tmp_path):
    tricky = {"tags": ["record"], "sourceCode": 'x = {"record": 1}'}
    array = write_json(tmp_path / "a.json", [record(1, **tricky), record(2)])
    jsonl = write_jsonl(tmp_path / "b.jsonl", [record(3, **tricky), wrapper(4, **tricky)])
    result = load_records(array, jsonl)
    assert result.ok, lines(result)
    assert [int(r.id, 16) for r in result.records] == [1, 2, 3, 4]
    assert result.records[0].tags == ["record"]
