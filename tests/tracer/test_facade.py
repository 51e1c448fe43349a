"""The Tracer facade: all of its state declared when it is made, the config capture beside it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from diagnose.tracer import NonFiniteDetected, Tracer
from diagnose.tracer.beside import CapturedConfig


def _train(tracer: Tracer, steps: int, zeros_at: int | None = None) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    with tracer:
        for step in range(steps):
            out = model(x)
            if step == zeros_at:
                out = out / torch.zeros_like(out)  # a hand-written loss dividing by zero
            nn.functional.mse_loss(out, y).backward()
            opt.step()
            opt.zero_grad()


@pytest.mark.parametrize("detail_every", [1, 4])  # detailed steps; a light step replayed
def test_a_run_to_an_event_creates_no_attributes_on_the_tracer(detail_every):
    tracer = Tracer(detail_every=detail_every)
    declared = set(vars(tracer))
    with pytest.raises(NonFiniteDetected):
        _train(tracer, 6, zeros_at=5)
    assert tracer.event is not None and tracer.event.op == "div"
    tracer.report()
    assert set(vars(tracer)) == declared


def test_a_clean_run_creates_no_attributes_on_the_tracer():
    tracer = Tracer(detail_every=2)
    declared = set(vars(tracer))
    _train(tracer, 3)
    _train(tracer, 2)  # entered again
    assert tracer.report().status == "clean"
    assert set(vars(tracer)) == declared


def test_the_config_capture_is_entered_beside_the_tracer_and_left_with_it():
    config = CapturedConfig()
    tracer = Tracer(config=config)
    seen = []
    with tracer:
        seen.append(config.capture.installed)
        assert tracer.capture is config.capture  # what a framework callback hands objects to
        nn.Linear(2, 2)
        torch.optim.Adam(nn.Linear(2, 2).parameters(), lr=3e-4)
    assert seen == [True] and not config.capture.installed
    assert tracer.report().config.optimizer == "Adam"


def test_a_tracer_without_config_capture_reports_the_config_unknown():
    tracer = Tracer(config=None)
    _train(tracer, 2)
    report = tracer.report()
    assert tracer.capture is None
    assert (report.status, report.config.precision, report.config.optimizer) == (
        "clean",
        "unknown",
        None,
    )
