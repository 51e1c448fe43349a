"""An exception a framework callback reports (Lightning, transformers) is explained like one
the runner caught: the session's exception event carries the live run's explanation."""

from __future__ import annotations

import torch
from torch import nn

from diagnose.integrations.session import exception_event


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 12)
        self.fc = nn.Linear(10, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.body(x)))


def test_the_session_event_of_a_layer_size_crash_names_the_layer_and_its_input():
    try:
        Head()(torch.randn(3, 6))
    except RuntimeError as exc:
        event = exception_event(exc)
    crash = event.crash
    assert crash.family == "shape-mismatch"
    assert (crash.module, crash.sizes) == ("fc", {"in_features": 10, "out_features": 2})
    assert crash.input_shape == [3, 12]
    assert any("`body` (Linear)" in line for line in crash.evidence)
    assert [s.line for s in crash.sites if s.role == "built"] == [16]


def test_an_exception_of_no_crash_family_carries_no_explanation():
    try:
        raise ValueError("bad batch")
    except ValueError as exc:
        event = exception_event(exc)
    assert event.crash is None
