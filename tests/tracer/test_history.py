"""The step history stays bounded however long the run: every step near the start and near
the end (the event), the steps between summarised, and the rules still read it right."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from diagnose.engine import analyze
from diagnose.report import Report
from diagnose.tracer import NonFiniteDetected, Tracer
from diagnose.tracer.history import StepHistory


def _row(
    step, loss=1.0, grad_norm=0.5, activation=2.0, lr=0.1, scale=None, skipped=False, near=False
):
    return (step, loss, grad_norm, activation, lr, scale, skipped, near, True, 1.0)


def _report(history: StepHistory) -> Report:
    return Report(
        status="clean",
        script={"path": "train.py"},
        history=history.records(),
        history_note=history.note(),
    )


def test_a_short_run_keeps_every_step_as_it_was():
    history = StepHistory(first=4, last=4, buckets=4)
    for step in range(12):
        history.append(_row(step, loss=float(step)))
    rows = history.records()
    assert [r.step for r in rows] == list(range(12))
    assert all(r.summary is None for r in rows) and history.note() is None


def test_a_long_run_keeps_its_first_and_last_steps_and_summarises_the_middle():
    history = StepHistory(first=5, last=5, buckets=4)
    for step in range(20_000):
        history.append(_row(step, loss=float(step)))
    rows = history.records()
    assert len(history) == 20_000 and len(rows) <= 5 + 5 + 4 + 1
    assert [r.step for r in rows[:5]] == [0, 1, 2, 3, 4]
    assert [r.step for r in rows[-5:]] == list(range(19_995, 20_000))
    middle = rows[5:-5]
    assert all(r.summary is not None for r in middle)
    assert middle[0].step == 5 and middle[-1].summary.last_step == 19_994
    assert sum(r.summary.steps for r in middle) == 20_000 - 10
    for row in middle:  # each summary row is exact about the span it covers
        first, last = row.step, row.summary.last_step
        assert row.summary.steps == last - first + 1
        assert row.loss == (first + last) / 2
        assert (row.summary.loss_min, row.summary.loss_max) == (first, last)
    note = history.note()
    assert note.steps == 20_000 and note.summarized == 19_990
    assert "summarised" in note.message


def test_a_summary_row_keeps_the_alarming_values_of_its_steps():
    history = StepHistory(first=1, last=1, buckets=2)
    history.append(_row(0))
    for step in range(1, 9):
        history.append(
            _row(
                step,
                grad_norm=math.inf if step == 2 else 0.5,
                activation=60000.0 if step == 3 else 2.0,
                scale=2.0 ** (16 - step),
                skipped=step in (2, 4),
                near=step == 3,
            )
        )
    history.append(_row(9))
    summary, plain = [r for r in history.records() if r.summary is not None]
    assert (summary.step, summary.summary.last_step, plain.step) == (1, 4, 5)
    assert plain.summary.grad_norm_max == 0.5 and not plain.skipped
    assert summary.summary.grad_norm_max == math.inf and summary.grad_norm == 0.5
    assert summary.max_activation == 60000.0
    assert summary.skipped and summary.summary.skipped_steps == 2
    assert summary.near_limit and summary.summary.near_limit_steps == 1
    assert summary.loss_scale == 2.0**12 and summary.summary.loss_scale_max == 2.0**15


def test_the_rules_read_a_summarised_history_as_the_whole_run():
    history = StepHistory(first=5, last=5, buckets=4)
    for step in range(2000):
        history.append(
            _row(
                step,
                loss=1.0 + step,
                grad_norm=math.nan if step == 700 else 0.5,
                skipped=step % 100 == 50,
            )
        )
    facts = analyze(_report(history)).facts
    assert facts["history.steps"] == 2000
    assert facts["skipped_steps"] == 20
    assert facts["grad_norm.nonfinite"] is True
    assert facts["loss.max_abs"] == 2000.0
    assert facts["run.loss_growth"] > 100  # first steps against the last: still diverging


def test_a_report_stays_the_same_size_however_long_the_run():
    sizes = []
    for steps in (30_000, 120_000):
        history = StepHistory()
        for step in range(steps):
            history.append(_row(step, loss=1.0 / (step + 1), grad_norm=0.3, lr=1e-3))
        text = _report(history).to_json()
        assert Report.from_data(json.loads(text)).steps_recorded == steps
        sizes.append(len(text))
    assert max(sizes) < 1_000_000  # one row a step: about 8 MB and 33 MB
    assert sizes[1] <= sizes[0] * 1.05


def test_a_traced_training_loop_keeps_a_bounded_history_up_to_its_event():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    tracer = Tracer(history=StepHistory(first=5, last=5, buckets=4))
    try:
        with tracer:
            for step in range(60):
                optimizer.zero_grad()
                scale = math.inf if step == 59 else 1.0
                loss = nn.functional.mse_loss(model(x) * scale, y)
                loss.backward()
                optimizer.step()
    except NonFiniteDetected:
        pass
    report = tracer.report()
    assert report.status == "nonfinite" and report.event.step == 59
    assert len(report.history) <= 5 + 5 + 4 + 1
    assert report.steps_recorded == 59 == report.history_note.steps
    assert [r.step for r in report.history[:5]] == list(range(5))
    assert [r.step for r in report.history[-5:]] == list(range(54, 59))


def _clipped_run(clip: object) -> tuple[list[float], list[float | None]]:
    """Six steps of large gradients clipped at a norm of 1 by ``clip``: (the norms the clip
    measured, the grad norm column of the history)."""
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    measured: list[float] = []
    tracer = Tracer()
    with tracer:
        for _ in range(6):
            loss = model(torch.randn(8, 4) * 100).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            measured.append(float(clip(model.parameters())))
            optimizer.step()
    return measured, [r.grad_norm for r in tracer.report().history]


def test_under_clipping_the_history_shows_the_norm_the_clip_measured_not_the_clipped_one():
    measured, column = _clipped_run(lambda params: nn.utils.clip_grad_norm_(params, 1.0))
    assert min(measured) > 100  # the clip acted every step
    assert column == [pytest.approx(n, rel=1e-5) for n in measured]


def test_clipping_in_two_halves_shows_the_measured_norm_too():
    def two_halves(params):  # accelerate's way: measure, then clip with that norm
        params = list(params)
        total = nn.utils.get_total_norm([p.grad for p in params])
        nn.utils.clip_grads_with_norm_(params, 1.0, total)
        return total

    measured, column = _clipped_run(two_halves)
    assert column == [pytest.approx(n, rel=1e-5) for n in measured]
