"""The numbers an event carries: the producing op's inputs as typed values, not only prose."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diagnose.facts import extract_facts
from diagnose.formatting import num
from diagnose.report import Report
from diagnose.tracer import NonFiniteDetected, Tracer


def _log_of_relu() -> Tracer:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer()
    with pytest.raises(NonFiniteDetected), tracer:
        loss = torch.log(torch.relu(model(torch.randn(8, 4)))).mean()  # relu makes zeros
        loss.backward()
        opt.step()
    return tracer


def test_the_producing_ops_inputs_are_recorded_as_numbers():
    event = _log_of_relu().event
    assert event.op == "log"
    (values,) = event.op_input_values
    assert (values.name, values.dtype, values.min, values.min_abs) == (
        "input[0]",
        "float32",
        0.0,
        0.0,
    )
    assert values.max == values.max_abs == event.op_inputs[0].abs_max > 0
    # the detail line says the same numbers, in the one way numbers are written
    assert f"min |x| = 0, max |x| = {num(values.max_abs)}" in event.details[0]


def test_the_numbers_survive_the_json_report_and_are_what_facts_read():
    report = _log_of_relu().report()
    loaded = Report.from_data(json.loads(report.to_json()))
    assert loaded.event.op_input_values == report.event.op_input_values
    loaded.event.details = []  # facts do not need the prose
    facts, _ = extract_facts(loaded)
    assert (facts["op_input.has_zero"], facts["op_input.min_abs"]) == (True, 0.0)


def test_an_integer_input_has_bounds_but_no_magnitudes():
    torch.manual_seed(0)
    head = nn.Linear(4, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    labels = torch.full((8,), -100)
    tracer = Tracer()
    with pytest.raises(NonFiniteDetected), tracer:
        loss = F.cross_entropy(head(torch.randn(8, 4)), labels)  # every target ignored: nan
        loss.backward()
        opt.step()
    values = {v.name: v for v in tracer.event.op_input_values}
    target = values["input[1]"]
    assert (target.min, target.max, target.min_abs, target.max_abs) == (-100, -100, None, None)
    assert values["input[0]"].max_abs is not None
