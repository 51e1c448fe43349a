"""The capture records which of the user's lines called backward, step and zero_grad."""

from __future__ import annotations

import inspect

import torch

from tests.capture.conftest import snapshot


def _lines(func, *codes: str) -> list[int]:
    source, first = inspect.getsourcelines(func)
    return [first + next(i for i, text in enumerate(source) if code in text) for code in codes]


def lbfgs_steps(steps: int) -> None:
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=2)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for _ in range(steps):

        def closure():
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        optimizer.step(closure)


def test_a_closure_backward_and_the_step_that_calls_it_are_told_apart(capture):
    lbfgs_steps(2)
    calls = snapshot(capture)["training_calls"]
    zero_grad, backward, step = _lines(
        lbfgs_steps, "optimizer.zero_grad()", "loss.backward()", "optimizer.step(closure)"
    )
    file = inspect.getsourcefile(lbfgs_steps)
    assert [(s["file"], s["line"], s["function"]) for s in calls["backward"]] == [
        (file, backward, "closure")
    ]
    assert [(s["line"], s["function"], s["calls"]) for s in calls["step"]] == [
        (step, "lbfgs_steps", 2)
    ]
    assert [s["line"] for s in calls["zero_grad"]] == [zero_grad]


def joined_steps(model, optimizer) -> None:
    for _ in range(3):
        loss = model(torch.ones(1, 3)).sum()
        optimizer.zero_grad(); torch.autograd.backward(loss); optimizer.step()  # noqa: E702  # fmt: skip


def test_each_backward_counts_once_on_its_own_line(capture):
    model = torch.nn.Linear(3, 1)
    joined_steps(model, torch.optim.SGD(model.parameters(), lr=0.1))
    calls = snapshot(capture)["training_calls"]
    (line,) = _lines(joined_steps, "torch.autograd.backward(loss)")
    assert {kind: [(s["line"], s["calls"]) for s in sites] for kind, sites in calls.items()} == {
        "backward": [(line, 3)],
        "step": [(line, 3)],
        "zero_grad": [(line, 3)],
    }


def test_a_run_without_training_calls_writes_no_key(capture):
    torch.nn.Linear(2, 2)(torch.ones(1, 2))
    assert "training_calls" not in snapshot(capture)
