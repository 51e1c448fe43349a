"""Skeletons: exact facts (path, lines, source, URL, commit), valid schema-v2 records, marked
as skeletons; the shipped dataset holds none."""

from __future__ import annotations

import ast
import json

from diagnose.paths import records_dir
from diagnose.records import load_records
from diagnose.records.mine import Options, is_skeleton, mine
from tests.records.mine.conftest import MYLIB, SHA, at_line, records_of

PATH = "mylib/checks.py"
LINES = (MYLIB / PATH).read_text().split("\n")


def _raise_in(function: str) -> ast.Raise:
    tree = ast.parse((MYLIB / PATH).read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    return next(n for n in ast.walk(node) if isinstance(n, ast.Raise))


def test_facts_are_the_sites_own_lines_and_permalink():
    site = _raise_in("joined_lines")  # a raise over several lines
    line, end = site.lineno, site.end_lineno
    assert end - line >= 2
    record = at_line(records_of(MYLIB, repo="me/mylib", commit=SHA, context=1), PATH, line)
    assert (record["repo"], record["filePath"], record["analyzedSha"]) == ("me/mylib", PATH, SHA)
    assert record["sourceCodeStart"] == line - 1
    assert record["sourceCodeEnd"] == end  # the whole statement, past the context
    assert record["sourceCode"] == "\n".join(LINES[line - 2 : end])
    assert record["githubUrl"] == (
        f"https://github.com/me/mylib/blob/{SHA}/{PATH}#L{line - 1}-L{end}"
    )


def test_the_window_follows_the_upstream_sample():
    # the shipped copy of the upstream sample (transformers' debug_utils.py, raise at 282)
    seed = json.loads(next(iter(sorted(records_dir().glob("000_*.json")))).read_text())["record"]
    line = seed["lineNumber"]
    assert (seed["sourceCodeStart"], seed["sourceCodeEnd"]) == (line - 18, line + 18)
    record = records_of(MYLIB)[0]
    assert record["sourceCodeStart"] == max(1, record["lineNumber"] - 18)
    assert set(record) == set(seed)
    assert list(record) == list(seed)


def test_without_a_commit_nothing_is_invented():
    record = records_of(MYLIB, repo="me/mylib")[0]
    assert record["githubUrl"] is None and record["analyzedSha"] is None
    assert records_of(MYLIB)[0]["repo"] is None


def test_skeletons_are_valid_records_marked_as_skeletons(tmp_path):
    result = mine(str(MYLIB), Options(repo="me/mylib", commit=SHA))
    out = tmp_path / "skeletons.jsonl"
    out.write_text("".join(json.dumps(w) + "\n" for w in result.wrappers))
    loaded = load_records(out)
    assert loaded.ok and len(loaded.records) == len(result.wrappers) > 10
    assert all(is_skeleton(r) for r in loaded.records)
    record = result.wrappers[0]["record"]
    assert record["documentation"] is None and record["tags"] == ["skeleton"]


def test_ids_and_slugs_are_unique_and_ids_survive_moved_lines(tmp_path):
    ids = [r["id"] for r in records_of(MYLIB, repo="me/mylib")]
    assert len(set(ids)) == len(ids)
    moved = tmp_path / "mylib"
    (moved / "mylib").mkdir(parents=True)
    (moved / "pyproject.toml").write_text("")
    (moved / PATH).write_text("\n\n# moved down\n" + (MYLIB / PATH).read_text())
    moved_ids = [r["id"] for r in records_of(moved, repo="me/mylib")]
    assert moved_ids == ids


def test_no_shipped_record_is_a_skeleton():
    shipped = load_records(records_dir())
    assert len(shipped.records) > 0
    assert [r.slug for r in shipped.records if is_skeleton(r)] == []
