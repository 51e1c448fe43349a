"""A loop without a torch optimizer: each backward pass is a step, with its history and frames."""

from __future__ import annotations

import pytest
import torch

from diagnose import diagnose_script
from diagnose.tracer import NonFiniteDetected, Tracer

MODULE_LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(STEPS):
    out = model(x)
    if step == BAD:
        out = out - out.detach() - 1.0  # a negative prediction for the sqrt below
    loss = ((out - y) ** 2).mean() if step != BAD else out.sqrt().mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
            p.grad.zero_()
"""

TENSOR_LOOP = """
import torch
torch.manual_seed(0)
x, y = torch.randn(64, 3), torch.randn(64, 1)
w = torch.zeros(3, 1, requires_grad=True)
for step in range(STEPS):
    err = x @ w - y
    if step == BAD:
        err = err * float("inf")
    loss = (err ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.05 * w.grad
        w.grad = None
"""


def _script(tmp_path, text: str, steps: int, bad: int):
    path = tmp_path / "train.py"
    path.write_text(text.replace("STEPS", str(steps)).replace("BAD", str(bad)))
    return path


def test_a_healthy_hand_written_update_counts_each_backward_pass_as_a_step(tmp_path):
    report = diagnose_script(_script(tmp_path, MODULE_LOOP, 40, -1), [])
    assert report.status == "clean"
    assert [row.step for row in report.history] == list(range(40))
    assert report.frames and report.frames[-1].step == 39


def test_a_nan_gradient_of_a_hand_written_update_is_found_at_its_step(tmp_path):
    report = diagnose_script(_script(tmp_path, MODULE_LOOP, 40, 23), [])
    assert report.status == "nonfinite"
    assert report.event.step == 23 and report.event.phase in ("loss", "backward")
    assert len(report.history) == 23
    assert {f.step for f in report.frames} <= set(range(24)) and report.frames[-1].step == 23


def test_a_script_without_modules_has_its_steps_and_its_inf_at_the_real_step(tmp_path):
    report = diagnose_script(_script(tmp_path, TENSOR_LOOP, 30, 17), [])
    assert report.status == "nonfinite"
    assert report.event.step == 17 and report.event.phase == "loss"
    assert [row.step for row in report.history] == list(range(17))


def test_an_optimizer_made_before_the_tracer_attached_is_not_counted_twice():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Tracer() as tracer:
        for _ in range(5):
            opt.zero_grad()
            model(torch.randn(8, 3)).pow(2).mean().backward()
            opt.step()
    assert [row.step for row in tracer.history] == [0, 1, 2, 3, 4]
    assert tracer.step == 5


def test_the_api_stops_a_hand_written_loop_at_the_step_of_its_nan():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    caught = None
    try:
        with Tracer():
            for step in range(12):
                loss = model(torch.randn(8, 3)).pow(2).mean()
                (loss * (float("nan") if step == 9 else 1.0)).backward()
                with torch.no_grad():
                    for p in model.parameters():
                        p -= 0.1 * p.grad
                        p.grad = None
    except NonFiniteDetected as exc:
        caught = exc
    assert caught is not None and caught.event.step == 9


CLIPPED_LOOP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(6):
    model.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x) * (step + 1) ** 2, y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    print(f"norm {norm.item()!r}")
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-1e-3)
"""


def test_a_clip_after_a_hand_written_backward_gives_that_steps_norm(tmp_path, capfd):
    script = tmp_path / "clipped.py"
    script.write_text(CLIPPED_LOOP)
    report = diagnose_script(script, [])
    printed = [
        float(line.split()[1])
        for line in capfd.readouterr().out.splitlines()
        if line.startswith("norm ")
    ]
    assert len(printed) == 6
    recorded = [row.grad_norm for row in report.history]
    # each step's own norm (measured from its gradients), not the step's before
    assert recorded == pytest.approx(printed, rel=1e-5)
