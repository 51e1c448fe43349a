"""`diagnose rules list|test`, run as a user runs them (a real subprocess)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, run_cli

RULE = (
    "id: {id}\ntitle: My rule\nsymptom: division-by-zero\ndescription: d\nwhy: w\n"
    "fixes: [{{id: guard-division, weight: 0.5}}]\n"
    "tests:\n"
    "  match:\n"
    "    - {{symptom.division-by-zero: 0.9}}\n"
    "  no_match:\n"
    "    - {{symptom.division-by-zero: {no_match}}}\n"
)


def test_rules_list_shows_id_family_title_and_fixes():
    out = run_cli("rules", "list")
    assert out.returncode == 0, out.stderr
    assert "log-of-zero" in out.stdout and "numerics" in out.stdout
    assert "fixes: stabilize-log (1)" in out.stdout


def test_rules_list_json_with_a_user_rule_overriding_a_built_in(tmp_path: Path):
    (tmp_path / "division-by-zero.yaml").write_text(RULE.format(id="division-by-zero", no_match=0))
    out = run_cli("rules", "list", "--rules", str(tmp_path), "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    mine = [r for r in data["rules"] if r["id"] == "division-by-zero"]
    assert len(mine) == 1
    assert mine[0]["title"] == "My rule" and mine[0]["builtin"] is False
    assert mine[0]["fixes"] == [{"id": "guard-division", "weight": 0.5}]
    assert data["problems"] == []
    assert {"family", "symptom", "path"} <= set(mine[0])


def test_rules_list_reports_a_broken_user_file_and_still_lists(tmp_path: Path):
    (tmp_path / "broken.yaml").write_text("id: broken\ntitle: [x\n")
    out = run_cli("rules", "list", "--rules", str(tmp_path))
    assert out.returncode == 1
    assert "log-of-zero" in out.stdout
    assert "broken.yaml:3: not valid YAML" in out.stderr


def test_rules_test_passes_on_the_built_in_rules():
    out = run_cli("rules", "test")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("ok: ") and "0 failing cases" in out.stdout


def test_rules_test_fails_with_file_and_case_index(tmp_path: Path):
    (tmp_path / "good.yaml").write_text(RULE.format(id="good", no_match=0))
    (tmp_path / "wrong.yaml").write_text(RULE.format(id="wrong", no_match=0.3))
    out = run_cli("rules", "test", str(tmp_path))
    assert out.returncode == 1
    assert f"{tmp_path / 'wrong.yaml'}:11: rule wrong: tests.no_match[0]" in out.stdout
    assert "good.yaml" not in out.stdout.split("FAILED")[0]
    assert "FAILED: 2 rules, 4 cases, 1 failing cases, 0 broken files" in out.stdout


def test_rules_test_on_a_missing_folder_is_a_usage_error(tmp_path: Path):
    out = run_cli("rules", "test", str(tmp_path / "nope"))
    assert out.returncode == 2
    assert (
        out.stderr.strip() == f"diagnose: error: {tmp_path / 'nope'}: no such rule file or folder"
    )


def test_a_rule_with_a_huge_title_is_listed_within_bounds(tmp_path):
    source = (ROOT / "rules" / "numerics" / "division-by-zero.yaml").read_text()
    rule = tmp_path / "huge-title.yaml"
    rule.write_text(
        source.replace("id: division-by-zero", "id: huge-title").replace(
            "title: Division by zero", "title: " + "T" * 100_000
        )
    )
    run = run_cli("rules", "list", "--rules", str(rule))
    assert run.returncode == 0, run.stderr
    [line] = [line for line in run.stdout.splitlines() if line.startswith("huge-title")]
    assert len(line) < 1000 and f"characters in all; the full title is in {rule}" in line
