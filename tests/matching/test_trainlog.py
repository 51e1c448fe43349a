"""Reading a training log: the metric rows, and the first one whose loss or gradient went bad."""

from __future__ import annotations

import math

import pytest

from diagnose.matching.trainlog import MAX_ROWS, read_training_log
from tests.matching.nan_logs import HEALTHY_LOGS, NAN_LOGS


@pytest.mark.parametrize(
    ("url", "text", "line", "keys", "step"),
    NAN_LOGS,
    ids=[u.split("github.com/")[1] for u, *_ in NAN_LOGS],
)
def test_the_first_nonfinite_row_of_a_real_log_is_found(url, text, line, keys, step):
    first = read_training_log(text).first_nonfinite
    assert first is not None, url
    assert first.line == line
    assert {key for key, _ in first.nonfinite} == keys
    assert first.step == step


@pytest.mark.parametrize(
    ("url", "text"), HEALTHY_LOGS, ids=[u.split("github.com/")[1] for u, _ in HEALTHY_LOGS]
)
def test_a_finite_log_has_no_nonfinite_row(url, text):
    assert read_training_log(text).first_nonfinite is None


def test_the_rows_before_carry_loss_grad_norm_lr_and_scale():
    log = read_training_log(
        "Epoch: [115]  [1298/1299]  lr: 0.001435  loss: 6.5993 (6.5971)  loss_scale: 8192.0000"
        "  grad_norm: 0.3922  time: 0.4944\n"
        "Epoch: [115]  [1299/1299]  lr: 0.001435  loss: nan (nan)  loss_scale: 4096.0000"
        "  grad_norm: nan  time: 0.4944\n"
    )
    [before] = log.before
    assert (before.loss, before.grad_norm, before.lr, before.loss_scale) == (
        6.5993,
        0.3922,
        0.001435,
        8192.0,
    )
    assert log.first_nonfinite.line == 2


def test_numbers_that_are_not_metrics_are_not_read():
    text = (
        "torch 2.1.0 cuda 12.1, memory: 10762, eta: 2:44:49, acc: nan, mAP: nan\n"
        "    loss = criterion(outputs, labels)\n"
        'File "train.py", line 12, in <module>\n'
        "[loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step.\n"
    )
    log = read_training_log(text)
    assert log.rows == []


def test_loss_scaler_reductions_are_counted_in_each_wording():
    log = read_training_log(
        "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"
        "overflow detected, setting loss scale to: 64.0\n"
        "[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 16777216.0, reducing "
        "to 8388608.0\n"
    )
    assert [c.scale for c in log.scale_changes] == [32768.0, 64.0, 8388608.0]


def test_guard_messages_mark_the_event_without_a_value():
    for text in ("Loss is infinite or NaN!", "loss is nan, stopping training", "Loss is nan"):
        first = read_training_log(f"step 3 loss 1.5\n{text}\n").first_nonfinite
        assert first is not None and first.guard and first.line == 2, text


def test_ansi_colours_and_progress_bar_redraws_are_read_through():
    text = (
        "\x1b[32mEpoch 0:\x1b[0m  10%|#  | 1/10 [00:01<00:09, loss=2.31]\r"
        "Epoch 0:  20%|## | 2/10 [00:02<00:08, loss=nan]\n"
    )
    first = read_training_log(text).first_nonfinite
    assert first is not None and math.isnan(first.loss)
    assert [r.loss for r in read_training_log(text).before] == [2.31]


def test_a_huge_log_keeps_the_rows_before_the_event_within_a_bound():
    lines = [f"step {i} loss {2.0 + i * 1e-6:.6f}" for i in range(3 * MAX_ROWS)]
    lines.append(f"step {3 * MAX_ROWS} loss nan")
    log = read_training_log("\n".join(lines))
    assert len(log.rows) <= MAX_ROWS
    assert log.first_nonfinite.step == 3 * MAX_ROWS
    assert log.before[-1].step == 3 * MAX_ROWS - 1
    assert log.rows[0].step == 0


def test_a_loss_printed_as_a_named_tuple_is_read_part_by_part():
    log = read_training_log(
        "epoch 1 step 10 loss (min, avg, max): (0.276, 0.5, 1.6)\n"
        "epoch 1 step 20 loss (min, avg, max): (-0.276, nan, 1152.6)\n"
    )
    first_row = log.rows[0]
    assert (first_row.step, first_row.loss_key, first_row.loss) == (10, "loss_avg", 0.5)
    bad = log.first_nonfinite
    assert bad is not None and bad.line == 2 and bad.step == 20
    assert [key for key, _ in bad.nonfinite] == ["loss_avg"]


def test_a_tuple_of_another_arity_or_of_no_metric_is_not_read_as_losses():
    assert read_training_log("loss (min, max): (0.1, nan, 3.0)\n").first_nonfinite is None
    assert read_training_log("eta (h, m): (nan, 3)\n").rows == []


def test_printed_tensors_are_read_with_or_without_a_point_after_inf():
    log = read_training_log(
        "step 1 loss tensor(2.3012, device='cuda:0', grad_fn=<NllLossBackward0>)\n"
        "step 2 loss tensor(-inf., device='cuda:0')\n"
    )
    assert log.rows[0].loss == pytest.approx(2.3012)
    bad = log.first_nonfinite
    assert bad is not None and bad.loss == -math.inf and bad.step == 2


@pytest.mark.parametrize("tag", ["[rank0]: ", "[1,0]<stdout>:", "(RayTrainWorker pid=41521) "])
def test_rank_tags_of_launchers_do_not_hide_the_metrics(tag):
    log = read_training_log(f"{tag}step 1 loss 2.30\n{tag}step 2 loss nan\n")
    bad = log.first_nonfinite
    assert bad is not None and bad.step == 2 and log.rows[0].step == 1
