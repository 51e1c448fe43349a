"""The generated fault corpus: valid scripts for every pair it claims, truth that holds
together, reproducible cases, a scorer that counts what it says, and a few real runs.

Accuracy figures are the benchmark's output (``python -m benchmarks.corpus``), never asserted.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys

import pytest
import yaml

from benchmarks.corpus.generate import (
    HEALTHY,
    applicable,
    base_code,
    base_names,
    family_of,
    make_case,
    mutate,
    pick,
    sample,
    truth_of,
)
from benchmarks.corpus.operators import Mutant, Skip, all_operators
from benchmarks.corpus.runner import Outcome, run_case
from benchmarks.corpus.score import judge, table, why
from benchmarks.corpus.truth import CRASH_FAMILIES, PROPOSED_FAMILIES
from benchmarks.corpus.witness import plain_run
from diagnose.facts.symptoms import REGISTRY
from tests.conftest import ROOT

OPERATORS = all_operators()
FIX_IDS = set(yaml.safe_load((ROOT / "rules" / "_fixes.yaml").read_text())) | {
    *CRASH_FAMILIES.values(),
    *PROPOSED_FAMILIES.values(),
}
PAIRS = [(op, base) for op in sorted(OPERATORS) for base in applicable(op)]


def test_the_corpus_is_wide_enough_to_measure():
    faults = [op for op in OPERATORS.values() if not op.healthy]
    assert len(base_names()) >= 15
    assert len(faults) >= 35
    assert len({op.family for op in faults}) >= 25
    assert all(applicable(op.name) for op in OPERATORS.values()), "an operator applies nowhere"


@pytest.mark.parametrize("base", base_names())
def test_every_base_is_a_healthy_case(base):
    ast.parse(base_code(base))
    assert base in applicable("healthy-base")


def test_every_claimed_pair_makes_valid_python_with_consistent_truth():
    for name, base in PAIRS:
        op = OPERATORS[name]
        mutant = mutate(base, op, random.Random(7))
        assert isinstance(mutant, Mutant), (name, base)
        compile(mutant.code, f"{base}+{name}", "exec")
        truth = truth_of(base, op, mutant)
        if op.healthy:
            assert truth.family is None and not truth.fixes and truth.line is None
            continue
        assert mutant.code != base_code(base), (name, base)
        assert (
            truth.family in REGISTRY
            or truth.family in CRASH_FAMILIES
            or truth.family in PROPOSED_FAMILIES
        ), truth.family
        assert truth.fixes and set(truth.fixes) <= FIX_IDS, (name, truth.fixes)
        if truth.line is not None:
            line = mutant.code.splitlines()[truth.line - 1]
            assert mutant.producer in line and line not in base_code(base).splitlines()


def test_an_operator_that_does_not_fit_says_why_and_changes_nothing():
    skipped = mutate("mlp_regression", OPERATORS["plain-list-layers"], random.Random(0))
    assert isinstance(skipped, Skip) and "ModuleList" in skipped.why
    skipped = mutate("hf_trainer", OPERATORS["no-zero-grad"], random.Random(0))
    assert isinstance(skipped, Skip)


def test_a_case_is_made_again_from_its_name_alone():
    cases = sample(5, 6)
    assert [c.name for c in cases] == [f"5:{i}" for i in range(6)]
    again = make_case(5, 3)
    assert (again.code, again.truth) == (cases[3].code, cases[3].truth)
    lr = sample(5, 3, family="lr-too-high")
    assert all(c.truth.family == "lr-too-high" for c in lr)
    assert [make_case(c.seed, c.index).code for c in lr] == [c.code for c in lr]


def test_a_sample_mixes_faults_and_healthy_cases():
    families = [family_of(OPERATORS[c.truth.operator]) for c in sample(2, 60)]
    assert 5 <= families.count(HEALTHY) <= 30
    assert len(set(families)) >= 15


def _case(operator: str, base: str):
    for index in range(5000):
        op, picked, _ = pick(3, index)
        if (op.name, picked) == (operator, base):
            return make_case(3, index)
    raise AssertionError(f"no {operator} on {base} in seed 3")


def test_the_scorer_counts_top1_top3_producer_and_false_alarms():
    fault = _case("log-of-relu", "mlp_regression")
    right = Outcome(
        "nonfinite", 1, ("log-domain",), ("stabilize-log",), "model", fault.truth.line, "log"
    )
    third = Outcome("nonfinite", 1, ("lr-too-high", "x", "log-domain"), ("a", "stabilize-log"))
    wrong_line = Outcome("nonfinite", 1, ("log-domain",), ("stabilize-log",), "model", 1)
    assert judge(fault, right).right and judge(fault, right).producer
    assert (judge(fault, third).top1, judge(fault, third).top3) == (False, True)
    assert judge(fault, wrong_line).top1 and judge(fault, wrong_line).producer is False
    healthy = make_case(*_first_healthy())
    alarm = judge(healthy, Outcome("silent", 1, ("lr-too-low",), ("raise-learning-rate",)))
    clean = judge(healthy, Outcome("clean", 0))
    assert clean.right and not alarm.right and "healthy" in why(alarm)
    text = table([judge(fault, right), judge(fault, third), alarm, clean])
    assert "log-domain" in text and "healthy (false alarms)" in text


def _first_healthy() -> tuple[int, int]:
    return next((3, i) for i in range(200) if pick(3, i)[0].healthy)


def test_the_command_writes_a_case_out_and_refuses_a_bad_name(tmp_path):
    command = [sys.executable, "-m", "benchmarks.corpus"]
    done = subprocess.run(
        [*command, "--case", "4:2", "--keep", str(tmp_path), "--no-run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    truth = json.loads((tmp_path / "4_2" / "truth.json").read_text())
    assert truth["case"] == "4:2"
    assert (tmp_path / "4_2" / "train.py").read_text() == make_case(4, 2).code
    from benchmarks.corpus.__main__ import parse_args

    assert parse_args(["--witness", "--seed", "2"]).witness
    bad = subprocess.run(
        [*command, "--case", "four"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("operator", "base"),
    [
        ("healthy-base", "hand_written_sgd"),
        ("log-of-relu", "mlp_regression"),
        ("no-zero-grad", "mlp_regression"),
    ],
)
def test_a_case_runs_end_to_end_through_the_real_diagnose(operator, base, tmp_path):
    case = _case(operator, base)
    outcome = run_case(case, keep=tmp_path, timeout=180)
    assert outcome.error is None, outcome.error
    assert outcome.status in {"clean", "nonfinite", "silent", "exception"}
    assert (tmp_path / "report.json").exists() and (tmp_path / "truth.json").exists()
    verdict = judge(case, outcome)
    assert verdict.family == family_of(OPERATORS[operator])


def test_the_plain_run_says_how_a_script_ends_without_the_tool(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "print('step 0 loss 0.69')\nprint('step 1 loss nan')\nraise RuntimeError('bad shape')\n"
    )
    said = plain_run(script, timeout=60)
    assert said.startswith("plain run: exit 1 (RuntimeError: bad shape)")
    assert "loss 0.69 -> nan (first non-finite: nan)" in said
    script.write_text("print('fine')\n")
    assert plain_run(script, timeout=60) == "plain run: exit 0, no loss printed"


def test_a_base_is_read_for_the_places_operators_act_on():
    from benchmarks.corpus.generate import base_script

    script = base_script("residual_net")
    assert script.root()[0] == "model" and script.root()[1].name == "ResNet"
    assert script.optimizer_names() == ["optimizer"] and script.loss_name() == "loss"
    assert script.data_names() == ("features", "targets")  # through TensorDataset
    assert script.kind(script.value_of("features", first=True)) == "float"
    assert script.kind(script.value_of("targets", first=True)) == "int"
    vae = base_script("vae")  # the loop's `x = data[...]` read back to the tensor made before
    assert vae.tensor_before_training(vae.data_names()[0]) == "data"
    lbfgs = base_script("lbfgs_closure")  # the loss of the closure, not the loop's step result
    assert "mse_loss" in cst_code(lbfgs.loss_stmt())


def cst_code(node) -> str:
    import libcst as cst

    return cst.Module([]).code_for_node(node)
