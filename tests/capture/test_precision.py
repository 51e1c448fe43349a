"""Precision: parameter dtypes, autocast, and GradScaler (including unscale_ before clipping)."""

from __future__ import annotations

import pytest
import torch

from tests.capture.conftest import mlp, snapshot, train


def test_fp32_model_is_fp32(capture):
    model = mlp()
    train(model, torch.optim.SGD(model.parameters(), lr=0.1))
    config = snapshot(capture)
    assert config["precision"] == "fp32"
    assert config["param_dtypes"] == {"float32": sum(p.numel() for p in model.parameters())}
    assert config["autocast_dtype"] is None
    assert config["grad_scaler"] is False


def test_half_model_is_fp16(capture):
    model = mlp().half()
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), dtype=torch.float16)
    config = snapshot(capture)
    assert config["precision"] == "fp16"
    assert set(config["param_dtypes"]) == {"float16"}


def test_bf16_model_is_bf16(capture):
    model = mlp().to(torch.bfloat16)
    train(model, torch.optim.SGD(model.parameters(), lr=0.1), dtype=torch.bfloat16)
    assert snapshot(capture)["precision"] == "bf16"


def test_half_model_with_fp32_head_is_mixed(capture):
    model = mlp()
    model[0].half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.step()  # no training needed: the parameters decide
    config = snapshot(capture)
    assert config["precision"] == "mixed"
    assert set(config["param_dtypes"]) == {"float16", "float32"}


def test_cpu_autocast_bf16_over_fp32_weights(capture):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def forward(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x)

    train(forward_module(forward), optimizer)
    config = snapshot(capture)
    assert config["precision"] == "bf16-autocast"
    assert config["autocast_dtype"] == "bfloat16"
    assert config["autocast"] == [
        {"device_type": "cpu", "dtype": "bfloat16", "enabled": True, "entries": 3}
    ]


def test_autocast_as_decorator_and_disabled_region(capture):
    model = mlp()

    @torch.autocast("cpu", dtype=torch.bfloat16)
    def forward(x):
        return model(x)

    with torch.autocast("cpu", enabled=False):
        model(torch.randn(2, 4))
    train(forward_module(forward), torch.optim.SGD(model.parameters(), lr=0.1), steps=2)
    config = snapshot(capture)
    assert config["precision"] == "bf16-autocast"
    assert {"device_type": "cpu", "dtype": "bfloat16", "enabled": False, "entries": 1} in (
        config["autocast"]
    )


def test_models_passed_in_count_without_an_optimizer(capture):
    model = mlp().half()
    config = snapshot(capture, modules=[model])
    assert config["precision"] == "fp16"
    assert config["optimizer"] is None


@pytest.mark.parametrize("unscale_first", [True, False])
def test_grad_scaler_and_whether_unscale_came_before_clipping(capture, unscale_first):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    loss_fn = torch.nn.MSELoss()
    for _ in range(5):
        loss = loss_fn(model(torch.randn(8, 4)), torch.randn(8, 2))
        scaler.scale(loss).backward()
        if unscale_first:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
    config = snapshot(capture)
    assert config["grad_scaler"] is True
    scaler_info = config["scaler"]
    assert scaler_info["init_scale"] == 1024.0
    assert scaler_info["growth_interval"] == 2
    assert scaler_info["growth_factor"] == 2.0 and scaler_info["backoff_factor"] == 0.5
    assert scaler_info["scale"] == scaler.get_scale() == 4096.0  # grew twice in 5 clean steps
    assert config["grad_clip"]["clip_after_unscale"] is unscale_first
    assert config["grad_clip"]["calls_before_unscale"] == (0 if unscale_first else 5)


def test_disabled_scaler_is_not_loss_scaling(capture):
    model = mlp()
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(
        model,
        optimizer,
        before_step=lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0),
    )
    del scaler
    config = snapshot(capture)
    assert config["grad_scaler"] is False
    assert config["grad_clip"]["clip_after_unscale"] is None


def forward_module(function):
    """Wrap a plain function as a module so ``train`` can call it."""

    class Forward(torch.nn.Module):
        def forward(self, x):
            return function(x)

    return Forward()
