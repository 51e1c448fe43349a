"""The meta-test over every built-in rule, the rule loader's error reporting, and the docs page.

Every rule carries cases that must fire it and cases that must not; this file runs them all,
so adding a rule needs no Python but cannot skip its tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from diagnose.engine import load_fixes, load_rules, run_cases
from diagnose.engine.docs import render
from diagnose.facts.catalog import FACTS
from diagnose.facts.symptoms import FAMILIES
from diagnose.paths import rules_dir

ROOT = Path(__file__).resolve().parent.parent
BUILTIN, BUILTIN_PROBLEMS = load_rules()

DESIGN_FIX_IDS = {
    "use-bf16",
    "upcast-to-fp32",
    "enable-loss-scaling",
    "unscale-before-clipping",
    "lower-learning-rate",
    "add-lr-warmup",
    "enable-grad-clipping",
    "stabilize-log",
    "guard-division",
    "guard-sqrt",
    "sanitize-inputs",
    "raise-adam-eps",
    "fix-initialization",
}


def test_every_built_in_rule_loads():
    assert BUILTIN_PROBLEMS == []
    assert len(BUILTIN) >= 20


@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_rule_has_both_kinds_of_case_and_they_pass(rule):
    assert rule.match_cases and rule.no_match_cases
    count, failures = run_cases([rule])
    assert count == len(rule.match_cases) + len(rule.no_match_cases)
    assert failures == [], "\n".join(map(str, failures))


@pytest.mark.parametrize("rule", BUILTIN, ids=lambda r: r.id)
def test_rule_lives_in_its_family_folder_named_after_its_id(rule):
    path = Path(rule.path)
    assert path.stem == rule.id
    assert path.parent.parent == rules_dir() and path.parent.name == rule.family
    assert rule.family in FAMILIES  # one symptom module per family (diagnose/facts/symptoms)


def test_the_fix_catalogue_covers_the_design_vocabulary_and_every_rule():
    fixes, problems = load_fixes()
    assert problems == []
    assert set(fixes) >= DESIGN_FIX_IDS
    for fix in fixes.values():
        assert fix.title and fix.why
        assert fix.example_patch.index("# before") < fix.example_patch.index("# after")
    assert {f for rule in BUILTIN for f, _ in rule.fixes} <= set(fixes)
    assert {f for rule in BUILTIN for f, _ in rule.fixes} >= DESIGN_FIX_IDS


def test_a_rule_without_no_match_cases_fails_the_meta_test():
    rule = BUILTIN[0]
    bare = type(rule)(**{**rule.__dict__, "no_match_cases": ()})
    _, failures = run_cases([bare])
    assert [f.reason for f in failures] == ["the rule has no no_match case"]


def test_a_wrong_case_is_reported_with_file_line_and_index(tmp_path: Path):
    (tmp_path / "r.yaml").write_text(
        "id: r\ntitle: t\nsymptom: log-domain\ndescription: d\nwhy: w\n"
        "fixes: [{id: stabilize-log, weight: 1}]\n"
        "tests:\n"
        "  match:\n"
        "    - {symptom.log-domain: 0.9}\n"
        "  no_match:\n"
        "    - {symptom.log-domain: 0.5}\n"
    )
    rules, problems = load_rules(tmp_path, builtin=False)
    assert problems == []
    _, failures = run_cases(rules)
    assert len(failures) == 1
    assert str(failures[0]) == (
        f"{tmp_path / 'r.yaml'}:11: rule r: tests.no_match[0]: "
        "expected the rule not to fire, it did"
    )


# --- broken rule files: file, line, reason; the others still load -----------------------------

GOOD = (
    "id: {id}\ntitle: t\nsymptom: log-domain\ndescription: d\nwhy: w\n"
    "fixes: [{{id: stabilize-log, weight: 1}}]\n"
    "tests: {{match: [{{symptom.log-domain: 1}}], no_match: [{{symptom.log-domain: 0}}]}}\n"
)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("id: bad\ntitle: a: b\n", 2, "not valid YAML"),
        (
            GOOD.format(id="bad").replace("why: w\n", "why: w\nseverity: high\n"),
            6,
            "severity: unknown key",
        ),
        (GOOD.format(id="other"), 1, "must equal the file name 'bad'"),
        (
            GOOD.format(id="bad").replace("symptom: log-domain", "symptom: log-zero"),
            3,
            "unknown symptom 'log-zero'",
        ),
        (
            GOOD.format(id="bad").replace("id: stabilize-log", "id: stabilise-log"),
            6,
            "unknown fix id 'stabilise-log'",
        ),
        (
            GOOD.format(id="bad")
            + "conditions:\n  all:\n    - {fact: event.op, operator: like, value: x}\n",
            10,
            "like",
        ),
        (
            GOOD.format(id="bad")
            + "conditions:\n  not:\n    fact: event.opp\n    operator: exists\n",
            10,
            "unknown fact 'event.opp'",
        ),
        (
            GOOD.format(id="bad") + "conditions: {fact: event.op, operator: matches, value: '('}\n",
            8,
            "bad regular expression",
        ),
        (
            GOOD.format(id="bad") + "conditions: {fact: lr, operator: gt}\n",
            8,
            "'value' is a required",
        ),
        (
            GOOD.format(id="bad").replace("no_match: [{symptom.log-domain: 0}]", "no_match: []"),
            7,
            "tests.no_match: [] should be non-empty",
        ),
        ("- just\n- a list\n", 1, "a rule is a YAML mapping"),
    ],
)
def test_a_broken_rule_file_is_reported_with_its_line(tmp_path: Path, text, line, reason):
    (tmp_path / "bad.yaml").write_text(text)
    (tmp_path / "good.yaml").write_text(GOOD.format(id="good"))
    rules, problems = load_rules(tmp_path, builtin=False)
    assert [r.id for r in rules] == ["good"]
    assert len(problems) == 1
    problem = problems[0]
    assert (Path(problem.file).name, problem.line) == ("bad.yaml", line), str(problem)
    assert reason in problem.reason


def test_missing_path_and_data_files_are_handled(tmp_path: Path):
    (tmp_path / "_notes.yaml").write_text("not: a rule\n")  # data files start with "_"
    rules, problems = load_rules(tmp_path, builtin=False)
    assert rules == [] and problems == []
    _, problems = load_rules(tmp_path / "nope", builtin=False)
    assert "no such rule file or folder" in problems[0].reason


def test_a_user_folder_can_add_fixes(tmp_path: Path):
    (tmp_path / "_fixes.yaml").write_text(
        'my-fix:\n  title: T\n  why: W\n  example_patch: "# before\\nx\\n# after\\ny"\n'
    )
    (tmp_path / "r.yaml").write_text(GOOD.format(id="r").replace("stabilize-log", "my-fix"))
    rules, problems = load_rules(tmp_path)
    assert problems == []
    assert any(r.id == "r" and r.fixes == (("my-fix", 1.0),) for r in rules)


def test_rule_conditions_read_only_documented_facts():
    from diagnose.engine.conditions import walk_tests

    for rule in BUILTIN:
        for leaf in walk_tests(rule.conditions):
            assert leaf["fact"] in FACTS or leaf["fact"].startswith("symptom."), rule.id


# --- the generated reference page -------------------------------------------------------------


def test_docs_rules_md_is_up_to_date():
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == render(), (
        "docs/rules.md is out of date: run `python -m diagnose.engine docs > docs/rules.md`"
    )


def test_docs_page_names_every_rule_fix_operator_and_fact():
    page = render()
    for rule in BUILTIN:
        assert f"#### `{rule.id}`" in page
    for fact in FACTS:
        assert f"| `{fact}` |" in page
    assert "| `between` |" in page


def test_docs_generator_runs_as_a_module():
    out = subprocess.run(
        [sys.executable, "-m", "diagnose.engine", "docs"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert out.stdout == render()


# --- bounded reading: alias bombs, FIFOs ------------------------------------------------------

LOAD_IN_CHILD = """
import sys
from diagnose.engine import load_rules
rules, problems = load_rules(sys.argv[1], builtin=False)
print([r.id for r in rules])
print("\\n".join(map(str, problems)))
"""


def _load_in_child(folder: Path) -> list[str]:
    """load_rules in a child process with a timeout: a regression cannot hang the suite."""
    done = subprocess.run(
        [sys.executable, "-c", LOAD_IN_CHILD, str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_yaml_alias_bomb_is_a_broken_file_and_the_others_still_load(tmp_path: Path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    (tmp_path / "bomb.yaml").write_text(GOOD.format(id="bomb") + bomb)
    (tmp_path / "good.yaml").write_text(GOOD.format(id="good"))
    out = _load_in_child(tmp_path)
    assert out[0] == "['good']"
    assert out[1:] == [
        f"{tmp_path / 'bomb.yaml'}: YAML too large / too many aliases (more than 100,000 values "
        "once aliases are expanded, at line 12)"
    ]


def test_a_fifo_rule_file_is_a_broken_file_and_the_others_still_load(tmp_path: Path):
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "good.yaml").write_text(GOOD.format(id="good"))
    out = _load_in_child(tmp_path)
    assert out == [
        "['good']",
        f"{tmp_path / 'fifo.yaml'}: cannot read: not a regular file (a FIFO)",
    ]
    assert _load_in_child(tmp_path / "fifo.yaml") == [
        "[]",
        f"{tmp_path / 'fifo.yaml'}: cannot read: not a regular file (a FIFO)",
    ]
