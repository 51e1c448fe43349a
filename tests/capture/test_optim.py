"""Optimizers (class, every param group) and LR schedulers (class, arguments, warmup)."""

from __future__ import annotations

import math

import pytest
import torch

from diagnose.capture import ConfigCapture
from tests.capture.conftest import mlp, snapshot, train


def test_sgd_with_momentum_and_two_param_groups(capture):
    model = mlp()
    optimizer = torch.optim.SGD(
        [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.01}],
        lr=0.1,
        momentum=0.9,
        nesterov=True,
        weight_decay=1e-4,
    )
    train(model, optimizer, steps=2)
    config = snapshot(capture)
    assert config["optimizer"] == "SGD"
    assert config["lr"] == 0.1 and config["lr_initial"] == 0.1
    assert config["optimizer_steps"] == 2
    first, second = config["param_groups"]
    assert first["momentum"] == 0.9 and first["nesterov"] is True
    assert first["weight_decay"] == 1e-4
    assert second["lr"] == 0.01
    assert first["num_params"] == 2 and first["numel"] == 4 * 8 + 8
    assert first["dtypes"] == ["float32"]


def test_adamw_betas_eps_and_weight_decay(capture):
    model = mlp()
    train(
        model,
        torch.optim.AdamW(
            model.parameters(), lr=3e-4, betas=(0.85, 0.95), eps=1e-6, weight_decay=0.05
        ),
    )
    group = snapshot(capture)["param_groups"][0]
    assert group["betas"] == [0.85, 0.95]
    assert group["eps"] == 1e-6 and group["weight_decay"] == 0.05
    assert snapshot(capture)["optimizer"] == "AdamW"


def test_optimizer_built_inside_a_function_outlives_it(capture):
    def main():
        model = mlp()
        train(model, torch.optim.Adam(model.parameters(), lr=0.5))

    main()
    config = snapshot(capture)
    assert config["optimizer"] == "Adam" and config["lr"] == 0.5
    assert config["precision"] == "fp32"


def test_optimizer_built_before_install_is_found_at_its_first_step():
    model = mlp()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.02, alpha=0.9)
    with ConfigCapture() as cap:
        train(model, optimizer, steps=2)
        config = snapshot(cap)
    assert config["optimizer"] == "RMSprop"
    assert config["param_groups"][0]["alpha"] == 0.9
    assert config["optimizer_steps"] == 2


def test_step_lr_records_its_arguments_and_current_lr(capture):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    train(model, optimizer, steps=4, scheduler=scheduler)
    config = snapshot(capture)
    assert config["lr_scheduler"]["class"] == "StepLR"
    assert config["lr_scheduler"]["step_size"] == 2 and config["lr_scheduler"]["gamma"] == 0.5
    assert config["lr_scheduler"]["last_epoch"] == 4
    assert config["lr"] == pytest.approx(0.025)
    assert config["lr_initial"] == 0.1
    assert "warmup" not in config["lr_scheduler"]


def test_lambda_lr_warmup_is_seen_from_the_first_lr():
    warmup = 10
    model = mlp()
    with ConfigCapture() as cap:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min(1.0, (step + 1) / warmup)
        )
        train(model, optimizer, steps=2, scheduler=scheduler)
        config = snapshot(cap)
    described = config["lr_scheduler"]
    assert described["class"] == "LambdaLR"
    assert described["lr_lambdas"] == [
        {"function": ("test_lambda_lr_warmup_is_seen_from_the_first_lr.<locals>.<lambda>")}
    ]
    assert described["warmup"]["evidence"].startswith("lr starts at 0.01")
    assert math.isclose(config["lr"], 0.03)


def test_transformers_style_warmup_names_its_steps(capture):
    transformers_optimization = pytest.importorskip("transformers.optimization")
    model = mlp()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = transformers_optimization.get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=5, num_training_steps=100
    )
    train(model, optimizer, steps=1, scheduler=scheduler)
    warmup = snapshot(capture)["lr_scheduler"]["warmup"]
    assert warmup["steps"] == 5


def test_sequential_linear_warmup_then_cosine(capture):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    warm = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=4)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
    scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warm, cosine], milestones=[4])
    train(model, optimizer, steps=2, scheduler=scheduler)
    described = snapshot(capture)["lr_scheduler"]
    assert described["class"] == "SequentialLR"
    assert [s["class"] for s in described["schedulers"]] == ["LinearLR", "CosineAnnealingLR"]
    assert described["warmup"]["steps"] == 4


def test_reduce_on_plateau_is_recorded(capture):
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.2, patience=3)
    scheduler.step(1.0)
    described = snapshot(capture)["lr_scheduler"]
    assert described["class"] == "ReduceLROnPlateau"
    assert described["factor"] == 0.2 and described["patience"] == 3


def test_a_hyper_parameter_that_is_a_pair_is_kept_as_the_optimizer_holds_it(capture):
    model = mlp()
    train(model, torch.optim.Adafactor(model.parameters(), lr=1e-2, eps=(None, 1e-3)))
    config = snapshot(capture)  # still a valid Config, written back as captured
    assert config["optimizer"] == "Adafactor"
    assert config["param_groups"][0]["eps"] == [None, 1e-3]
