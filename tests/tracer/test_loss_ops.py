"""An inf/nan born in a hand-written loss, outside any module: the op's own row and values."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from diagnose.engine import analyze
from diagnose.tracer import NonFiniteDetected, Tracer


def _run(loss_fn, frames: int = 21) -> Tracer:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 4)
    tracer = Tracer(frames=frames)
    with pytest.raises(NonFiniteDetected), tracer:
        loss_fn(model(x)).backward()
        opt.step()
    return tracer


def _log_of_zero(out):
    p = torch.sigmoid(out) * 0  # exactly 0
    return -(torch.log(p) * 0.5).mean()  # log(0) = -inf; the mean times -1 is +inf


def _log_of_negative(out):
    return torch.log(out.tanh() - 2).mean()  # every input below 0: nan


def test_the_producing_op_ends_the_frames_as_the_producer_row():
    tracer = _run(_log_of_zero)
    report = tracer.report()
    assert report.event.phase == "loss" and report.event.module is None
    row = report.frames[-1]
    assert row.producer and [f.producer for f in report.frames].count(True) == 1
    assert (row.phase, row.module, row.module_type) == ("loss", None, "log")
    assert row.inputs[0].zeros == 16 and row.outputs[0].inf == 16
    assert row.index > max(f.index for f in report.frames[:-1])


def test_the_producer_row_keeps_the_frames_within_their_number():
    assert len(_run(_log_of_zero, frames=3).report().frames) == 3


def test_the_event_keeps_what_the_op_itself_returned():
    event = _run(_log_of_zero).report().event
    assert (event.op, event.op_value, event.value) == ("log", "-inf", "inf")
    assert "returned -inf" in event.message


def test_symptom_evidence_is_worded_from_the_ops_own_value():
    report = analyze(_run(_log_of_zero).report())
    evidence = report.symptoms[0].evidence[0]
    assert report.symptoms[0].id == "log-domain"
    assert evidence.startswith("the first -inf came out of log")
    assert "(the loss became inf after it)" in evidence
    assert "its input holds 0" in evidence


def test_log_of_a_negative_number_is_told_from_log_of_zero():
    report = analyze(_run(_log_of_negative).report())
    assert report.event.op_value == "nan" and report.event.op_inputs[0].min < 0
    assert report.facts["op_input.has_negative"] is True
    assert report.facts["op_input.has_zero"] is False
    log = next(s for s in report.symptoms if s.id == "log-domain")
    assert "negative numbers" in log.evidence[0] and "after it" not in log.evidence[0]


def test_a_python_number_beyond_the_dtype_range_is_named_as_the_ops_operand():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = torch.randn(8, 4)
    with pytest.raises(NonFiniteDetected) as caught, Tracer():
        loss = lin(x).pow(2).mean() * 1e39  # 1e39 is inf once cast to float32
        loss.backward()
        opt.step()
    event = caught.value.event
    assert (event.phase, event.op) == ("loss", "mul")
    assert "the number 1.0e39 (inf in float32)" in event.message
