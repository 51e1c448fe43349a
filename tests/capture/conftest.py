"""Fixtures for the config-capture tests: an installed capture and a tiny real training loop."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from diagnose.capture import ConfigCapture
from diagnose.report import Config


@pytest.fixture
def capture() -> Iterator[ConfigCapture]:
    cap = ConfigCapture().install()
    try:
        yield cap
    finally:
        cap.uninstall()


def snapshot(cap: ConfigCapture, **kwargs: Any) -> dict[str, Any]:
    """Take a snapshot and check the contract: strict JSON, every key declared by the report's
    ``Config``, and that model writes the very JSON the capture wrote."""
    config = cap.snapshot(**kwargs)
    text = json.dumps(config, allow_nan=False)
    validated = Config.model_validate(config)
    assert validated.model_extra == {}, f"undeclared config keys: {sorted(validated.model_extra)}"
    assert json.dumps(json.loads(validated.model_dump_json())) == text
    assert config["capture_errors"] == [], config["capture_errors"]
    return config


def train(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    steps: int = 3,
    dtype: torch.dtype = torch.float32,
    loss_fn: Callable[..., torch.Tensor] | None = None,
    before_step: Callable[[], None] | None = None,
    scheduler: Any = None,
) -> None:
    """A few plain training steps on random data."""
    loss_fn = loss_fn or torch.nn.MSELoss()
    generator = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randn(8, 4, generator=generator, dtype=dtype)
        y = torch.randn(8, 2, generator=generator)
        loss = loss_fn(model(x).float(), y)
        loss.backward()
        if before_step is not None:
            before_step()
        optimizer.step()
        optimizer.zero_grad()
        if scheduler is not None:
            scheduler.step()


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
