"""A nan log is answered: where it went non-finite, what led there, the causes, the command."""

from __future__ import annotations

import json

import pytest

from diagnose.matching.divergence import LOG_CONFIDENCE, diagnose_log
from tests.conftest import run_cli
from tests.matching.nan_logs import HEALTHY_LOGS, NAN_LOGS

DIVERGING = """\
$ python train.py --lr 5.0 --batch-size 32
step 0 | loss 2.31 | grad_norm 1.2 | lr 5.0
step 1 | loss 8.5 | grad_norm 40.1 | lr 5.0
step 2 | loss 120.4 | grad_norm 900.5 | lr 5.0
step 3 | loss 5430.2 | grad_norm 120000.0 | lr 5.0
step 4 | loss inf | grad_norm nan | lr 5.0
"""

SCALER_COLLAPSE = """\
[INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768
{'loss': 2.0491, 'learning_rate': 0.0001961913563176343, 'epoch': 0.28}
[INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2, reducing to 1
[INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1, reducing to 1
{'loss': nan, 'learning_rate': 0.0001961913563176343, 'epoch': 0.29}
"""


def test_a_divergence_is_blamed_on_the_lr_and_the_command_reruns_the_logged_script():
    diagnosis = diagnose_log(DIVERGING)
    assert diagnosis.first.line == 6
    assert [r.loss for r in diagnosis.before] == [2.31, 8.5, 120.4, 5430.2]
    assert "loss inf" in diagnosis.what and "step 4" in diagnosis.what
    assert diagnosis.causes[0].id == "lr-too-high"
    assert diagnosis.fixes[0].id == "lower-learning-rate"
    assert diagnosis.command == (
        "diagnose --max-steps 5 --report diagnose-report.json train.py --lr 5.0 --batch-size 32"
    )


def test_a_collapsing_loss_scaler_points_at_fp16():
    diagnosis = diagnose_log(SCALER_COLLAPSE)
    assert diagnosis.scale_changes == 3
    assert "loss-scale-collapse" in [c.id for c in diagnosis.causes]
    assert diagnosis.fixes[0].id == "use-bf16"


def test_gradients_that_turn_nan_under_a_finite_loss_are_said_to_go_first():
    _url, text, *_ = NAN_LOGS[0]  # HF Trainer: {'loss': 0.2051, 'grad_norm': nan, ...}
    diagnosis = diagnose_log(text)
    assert "gradients went non-finite first" in diagnosis.what
    assert "no-grad-clipping" not in [c.id for c in diagnosis.causes]  # a log shows no config


def test_a_log_supports_less_than_a_trace():
    for text in (DIVERGING, SCALER_COLLAPSE):
        diagnosis = diagnose_log(text)
        assert all(c.confidence <= LOG_CONFIDENCE for c in diagnosis.causes)
        assert all(f.score <= LOG_CONFIDENCE for f in diagnosis.fixes)


@pytest.mark.parametrize(
    ("url", "text", "line", "keys", "step"),
    NAN_LOGS,
    ids=[u.split("github.com/")[1] for u, *_ in NAN_LOGS],
)
def test_every_real_nan_log_gets_an_answer_with_a_command(url, text, line, keys, step):
    diagnosis = diagnose_log(text)
    assert diagnosis is not None and diagnosis.first.line == line
    assert diagnosis.command.startswith("diagnose ")
    json.dumps(diagnosis.to_dict())  # plain data


@pytest.mark.parametrize(("url", "text"), HEALTHY_LOGS)
def test_a_finite_log_gets_no_answer(url, text):
    assert diagnose_log(text) is None


def test_match_answers_a_nan_log_in_text_and_json(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(DIVERGING, encoding="utf-8")
    text = run_cli("match", str(log))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("Training log: the log shows loss inf, grad_norm nan at step 4")
    assert "diagnose --max-steps 5 --report diagnose-report.json train.py" in text.stdout
    data = json.loads(run_cli("match", "--format", "json", str(log)).stdout)
    assert data["training_log"]["first_nonfinite"]["line"] == 6
    assert data["training_log"]["causes"][0]["id"] == "lr-too-high"


def test_match_on_a_healthy_log_says_nothing_of_a_nan(tmp_path):
    out = run_cli("match", "--format", "json", stdin=HEALTHY_LOGS[0][1])
    assert json.loads(out.stdout)["training_log"] is None


def test_log_text_reaches_the_terminal_without_control_sequences():
    out = run_cli(
        "match", "-", stdin="step 1 loss 2.0\nstep 2 loss nan \x1b]52;c;aGk=\x07\x1b[2J\n"
    )
    assert out.returncode == 0
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout


def test_a_log_with_one_row_before_the_nan_claims_no_trend(tmp_path):
    # makemore's own output at --learning-rate 1e6: one logged row, then nan
    log = tmp_path / "train.log"
    log.write_text(
        "step 0 | loss 3.5123 | step time 115.95ms\nstep 10 | loss nan | step time 208.85ms\n"
    )
    out = run_cli("match", str(log))
    assert "too few rows before it to read a trend from" in out.stdout
    assert "look steady" not in out.stdout
