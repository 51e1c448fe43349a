"""``diagnose dataset mine`` as a user runs it: summary, output files, JSON, usage errors;
and ``dataset validate`` telling skeletons apart."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.records.mine.conftest import FIXTURES, MYLIB, SHA


def test_the_summary_counts_sites_per_kind_and_lists_failures(tmp_path):
    out = tmp_path / "skeletons.jsonl"
    run = run_cli(
        "dataset", "mine", str(FIXTURES), "--repo", "me/mylib", "--commit", SHA, "--out", str(out)
    )
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    # 13 raise sites (two spell no message), 15 C++ calls (one passes a variable)
    assert first == (
        "30 sites in 2 files: 13 raise, 2 warn, 15 C++ checks; 27 patterns self-tested OK, 0 failed"
    )
    wrappers = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(set(w) == {"record", "datasetVersion"} for w in wrappers)
    assert "wrote" in run.stdout and "skeleton" in run.stdout
    check = run_cli("dataset", "validate", str(out))
    assert check.returncode == 0, check.stdout
    assert "skeleton: needs text" in check.stdout
    assert check.stdout.splitlines()[-1].endswith(f"{len(wrappers)} skeletons that need text")


def test_a_folder_output_gets_one_file_per_record_and_json_summary(tmp_path):
    folder = tmp_path / "records"
    run = run_cli("dataset", "mine", str(MYLIB), "--out", str(folder), "--format", "json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    files = sorted(folder.iterdir())
    assert len(files) == summary["self_tested_ok"] == summary["written"] > 0
    assert files[0].name.startswith("000_")
    assert summary["by_kind"]["raise"] > 0 and summary["failed"] == []
    again = run_cli("dataset", "mine", str(MYLIB), "--out", str(folder))
    assert again.returncode == 2 and "not an empty folder" in again.stderr


def test_stdout_output_keeps_the_summary_on_stderr():
    run = run_cli("dataset", "mine", str(MYLIB), "--out", "-")
    assert run.returncode == 0
    assert all(
        json.loads(line)["record"]["tags"] == ["skeleton"] for line in run.stdout.splitlines()
    )
    assert "sites in" in run.stderr


def test_bad_options_are_one_line_usage_errors():
    for args, words in [
        (["--commit", "abc"], "not a full 40-hex commit"),
        (["--repo", "nope"], "is not OWNER/NAME"),
        (["--kind", "raise,oops"], "unknown kind 'oops'"),
    ]:
        run = run_cli("dataset", "mine", str(MYLIB), *args)
        assert run.returncode == 2 and words in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
    missing = run_cli("dataset", "mine", "./no/such/dir")
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr


def test_control_characters_in_mined_paths_are_shown_escaped(tmp_path):
    tree = tmp_path / "lib"
    tree.mkdir()
    (tree / "setup.py").write_text("")
    (tree / "evil\x1b[31m.py").write_text("def f(:\n")
    run = run_cli("dataset", "mine", str(tree))
    assert "\x1b" not in run.stderr and "evil\\x1b[31m.py" in run.stderr
