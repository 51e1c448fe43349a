"""Gradient clipping (norm / value, however it was imported) and the loss module."""

from __future__ import annotations

import torch
from torch.nn.utils import clip_grad_norm_ as imported_before_install

from tests.capture.conftest import mlp, snapshot, train


def test_no_clipping_is_none(capture):
    model = mlp()
    train(model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert snapshot(capture)["grad_clip"] is None


def test_clip_by_norm_through_the_module_attribute(capture):
    model = mlp()
    train(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        steps=4,
        before_step=lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, 2.0),
    )
    clip = snapshot(capture)["grad_clip"]
    assert clip["kind"] == "norm" and clip["max"] == 0.5 and clip["norm_type"] == 2.0
    assert clip["calls"] == 4
    assert clip["function"] == "torch.nn.utils.clip_grad_norm_"
    assert clip["clip_after_unscale"] is None  # no GradScaler


def test_clip_by_value(capture):
    model = mlp()
    train(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        before_step=lambda: torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1),
    )
    clip = snapshot(capture)["grad_clip"]
    assert (clip["kind"], clip["max"], clip["calls"]) == ("value", 0.1, 3)


def test_a_name_imported_before_install_is_seen_and_restored(capture):
    # this module did `from torch.nn.utils import clip_grad_norm_ as imported_before_install`
    # before the capture was installed; the binding is pointed at the wrapper meanwhile.
    model = mlp()
    train(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        before_step=lambda: imported_before_install(model.parameters(), 1.0),
    )
    assert snapshot(capture)["grad_clip"]["calls"] == 3
    capture.uninstall()
    assert imported_before_install is torch.nn.utils.clip_grad.clip_grad_norm_


def test_clipping_by_a_norm_measured_apart_is_clipping_by_norm(capture):
    # accelerate measures with get_total_norm, then clips with clip_grads_with_norm_, imported
    # inside its own function at call time
    model = mlp()

    def clip_in_two_halves() -> None:
        from torch.nn.utils import clip_grads_with_norm_, get_total_norm

        params = list(model.parameters())
        clip_grads_with_norm_(params, 0.25, get_total_norm([p.grad for p in params]))

    train(model, torch.optim.SGD(model.parameters(), lr=0.1), before_step=clip_in_two_halves)
    clip = snapshot(capture)["grad_clip"]
    assert (clip["kind"], clip["max"], clip["calls"]) == ("norm", 0.25, 3)
    assert clip["function"] == "torch.nn.utils.clip_grads_with_norm_"
    capture.uninstall()
    assert torch.nn.utils.clip_grads_with_norm_ is torch.nn.utils.clip_grad._clip_grads_with_norm_


def test_clip_grad_norm_with_infinite_max_only_measures(capture):
    model = mlp()
    train(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        before_step=lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf")),
    )
    config = snapshot(capture)
    assert config["grad_clip"] is None
    assert config["grad_clip_inactive"]["max"] == "inf"


def test_clipping_returns_what_torch_returns(capture):
    model = mlp()
    model(torch.randn(3, 4)).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
    expected = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    assert torch.allclose(norm, expected)
    assert (
        torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(p.grad) for p in model.parameters()])
        )
        <= 1.01e-3
    )


def test_the_called_loss_module_with_its_settings(capture):
    model = mlp()
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-1, label_smoothing=0.1)
    unused = torch.nn.L1Loss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = loss_fn(model(torch.randn(8, 4)), torch.randint(0, 2, (8,)))
        loss.backward()
        optimizer.step()
    loss = snapshot(capture)["loss"]
    assert loss == {
        "class": "CrossEntropyLoss",
        "calls": 2,
        "reduction": "mean",
        "ignore_index": -1,
        "label_smoothing": 0.1,
    }
    del unused


def test_loss_local_to_a_function_outlives_it(capture):
    def main():
        model = mlp()
        train(
            model,
            torch.optim.SGD(model.parameters(), lr=0.1),
            loss_fn=torch.nn.SmoothL1Loss(beta=0.5, reduction="sum"),
        )

    main()
    loss = snapshot(capture)["loss"]
    assert loss["class"] == "SmoothL1Loss" and loss["beta"] == 0.5 and loss["reduction"] == "sum"


def test_loss_module_hooks_still_run(capture):
    seen = []
    loss_fn = torch.nn.MSELoss()
    loss_fn.register_forward_hook(lambda module, args, output: seen.append(float(output)))
    value = loss_fn(torch.ones(2), torch.zeros(2))
    assert seen == [1.0] and float(value) == 1.0
