"""The size of a lower-learning-rate fix follows the evidence: how far the lr is above the usual
for the run, and how fast it diverged."""

from __future__ import annotations

import dataclasses

import pytest
from transformers import TrainingArguments

from diagnose.patches import make_patch
from diagnose.patches.lr_size import (
    candidate_lr,
    lowered_lr,
    lr_ladder,
    raised,
    suggest,
    user_lr,
    usual_lr,
)
from diagnose.report import Report


def _report(config: dict, step: int | None = 40, history: list | None = None, path="x.py"):
    event = None if step is None else {"kind": "nonfinite", "message": "nan", "step": step}
    return Report.model_validate(
        {
            "status": "nonfinite",
            "script": {"path": str(path)},
            "event": event,
            "config": config,
            "history": history or [],
        }
    )


def test_an_lr_orders_of_magnitude_above_the_optimizer_default_goes_back_to_it():
    report = _report({"optimizer": "torch.optim.Adam", "lr": 5e9})
    assert lowered_lr(report, 5e9) == pytest.approx(1e-3)
    reason = suggest(report, 5e9).reason
    assert "5.0e12x the usual 0.001" in reason and "torch.optim.Adam" in reason


def test_an_lr_near_the_usual_gets_a_tenfold_cut():
    report = _report({"optimizer": "torch.optim.Adam", "lr": 3e-3}, step=400)
    assert lowered_lr(report, 3e-3) == pytest.approx(3e-4)


def test_a_divergence_in_the_first_steps_gets_a_hundredfold_cut():
    report = _report({"optimizer": "torch.optim.Adam", "lr": 3e-3}, step=3)
    assert lowered_lr(report, 3e-3) == pytest.approx(3e-5)
    assert "diverged within 4 steps" in suggest(report, 3e-3).reason


def test_without_a_known_usual_lr_the_cut_is_still_tenfold():
    report = _report({"optimizer": "mylib.Lion", "lr": 1.0}, step=None)
    assert usual_lr(report) is None
    assert lowered_lr(report, 1.0) == pytest.approx(0.1)


def test_the_usual_of_a_transformers_run_is_the_installed_training_arguments_default():
    default = next(
        f.default for f in dataclasses.fields(TrainingArguments) if f.name == "learning_rate"
    )
    report = _report({"transformers": {"learning_rate": 50.0}, "optimizer": "torch.optim.AdamW"})
    assert usual_lr(report).lr == default
    assert lowered_lr(report, 50.0) == pytest.approx(default)


def test_the_usual_of_an_overridden_flag_is_the_scripts_default(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--learning-rate', type=float, default=5e-4)\n"
    )
    config = {
        "optimizer": "torch.optim.AdamW",
        "lr": 500.0,
        "args": {"learning_rate": 500.0},
        "args_given": {"learning_rate": "--learning-rate"},
    }
    report = _report(config, step=2, path=script)
    usual = usual_lr(report)
    assert usual.lr == 5e-4 and "--learning-rate" in usual.source
    assert lowered_lr(report, 500.0) == pytest.approx(5e-4)


def test_a_flag_default_meant_for_another_optimizer_is_not_the_usual(tmp_path):
    # the script's --lr default (20) is for its hand-written SGD; this run chose AdamW
    script = tmp_path / "main.py"
    script.write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--lr', type=float, default=20)\n"
    )
    config = {
        "optimizer": "torch.optim.AdamW",
        "lr": 1000.0,
        "args": {"lr": 1000.0},
        "args_given": {"lr": "--lr"},
    }
    usual = usual_lr(_report(config, step=3, path=script))
    assert usual.lr == pytest.approx(1e-3) and "AdamW" in usual.source


def test_the_usual_of_a_value_a_token_replaced_is_that_value():
    origin = {
        "kind": "argv",
        "token": "--learning_rate=1e3",
        "index": 1,
        "key": "learning_rate",
        "value": 1000.0,
        "overrides": 1e-3,
        "overrides_at": "train_shakespeare_char.py:28",
    }
    config = {"optimizer": "torch.optim.AdamW", "lr": 118.8, "lr_initial": 1000.0}
    report = _report({**config, "origins": {"lr": origin}}, step=11)
    usual = usual_lr(report)
    assert usual.lr == 1e-3 and "train_shakespeare_char.py:28" in usual.source
    assert lowered_lr(report, 1000.0) == pytest.approx(1e-3)


def test_the_users_lr_is_the_first_steps_not_the_scheduled_one_at_the_event():
    history = [{"step": 0, "lr": 2.0}, {"step": 1, "lr": 1.0}, {"step": 2, "lr": 0.5}]
    assert user_lr(_report({}, step=2, history=history)) == 2.0


def test_the_ladder_starts_at_the_suggestion_and_steps_down():
    report = _report({"optimizer": "torch.optim.Adam", "lr": 3e-3}, step=400)
    assert lr_ladder(report, 3e-3, rungs=3) == pytest.approx([3e-4, 3e-5, 3e-6])


def test_a_candidate_replaces_the_suggestion_only_inside_its_block():
    report = _report({"optimizer": "torch.optim.Adam", "lr": 3e-3}, step=400)
    with candidate_lr(1e-5):
        assert lowered_lr(report, 3e-3) == 1e-5
    assert lowered_lr(report, 3e-3) == pytest.approx(3e-4)


def test_an_lr_orders_below_the_usual_goes_back_to_it_and_one_near_it_is_raised_tenfold():
    report = _report({"optimizer": "torch.optim.Adam", "lr": 1e-9}, step=None)
    assert raised(report, 1e-9).lr == pytest.approx(1e-3)
    assert raised(report, 2e-4).lr == pytest.approx(2e-3)


def test_a_too_low_lr_from_a_token_is_raised_on_the_command_line(tmp_path):
    script = tmp_path / "main.py"
    script.write_text(
        "import argparse\np = argparse.ArgumentParser()\n"
        "p.add_argument('--lr', type=float, default=20)\n"
    )
    origin = {"kind": "argv", "token": "1e-5", "index": 1, "key": "lr", "value": 1e-5}
    config = {
        "args": {"lr": 1e-5},
        "args_given": {"lr": "--lr"},
        "origins": {"lr": origin},
    }
    report = _report(config, step=None, path=script)
    report.script.argv = ["--lr", "1e-5", "--epochs", "1"]
    result = make_patch("raise-learning-rate", script, report)
    assert result.argv == ["--lr", "20.0", "--epochs", "1"], result.note
    assert "the script's default of --lr" in result.note
    # a separate value is named with its option, as the user typed both
    assert "command line's '--lr 1e-5': run with '--lr 20.0' instead" in result.note


def test_an_lr_of_zero_is_known_and_raised_to_the_usual_in_the_optimizer_call(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nmodel = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.Adam(model.parameters(), lr=0.0)\n"
    )
    history = [{"step": i, "loss": 1.0, "lr": 0.0} for i in range(40)]
    report = _report({"optimizer": "torch.optim.Adam", "lr": 0.0}, step=None, path=script)
    report.history = Report.model_validate({**report.model_dump(), "history": history}).history
    result = make_patch("raise-learning-rate", script, report)
    assert result.diff is not None, result.note
    assert "lr=0.001" in result.new_source
    assert "lr 0 never moves a weight" in result.note
