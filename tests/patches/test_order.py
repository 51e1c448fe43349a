"""fix-training-call-order: backward, zero_grad and step reordered with the least movement."""

from __future__ import annotations

from diagnose.patches.order import mended
from tests.patches.helpers import diff_body, patch

BACKWARD_ZERO_STEP = """
    import torch
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.zero_grad()
        opt.step()
"""


def test_zero_grad_between_backward_and_step_moves_before_the_backward(tmp_path):
    result = patch(tmp_path, "fix-training-call-order", BACKWARD_ZERO_STEP)
    assert diff_body(result) == ["+    opt.zero_grad()", "-    opt.zero_grad()"]
    lines = [line.strip() for line in result.new_source.splitlines()]
    assert lines[-3:] == ["opt.zero_grad()", "loss.backward()", "opt.step()"]


def test_a_step_before_the_backward_moves_just_after_it(tmp_path):
    source = """
        import torch
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad()
            opt.step()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()  # the gradients of this batch
    """
    result = patch(tmp_path, "fix-training-call-order", source)
    lines = [line.strip() for line in result.new_source.splitlines()]
    assert lines[-4:] == [
        "opt.zero_grad()",
        "loss = torch.nn.functional.cross_entropy(model(x), y)",
        "loss.backward()  # the gradients of this batch",
        "opt.step()",
    ]


def test_calls_joined_on_one_line_are_reordered_there_keeping_its_comment(tmp_path):
    source = """
        import torch
        opt = torch.optim.SGD(params, lr=0.1)
        for x in data:
            loss = f(x)
            opt.zero_grad(); opt.step(); loss.backward()  # one line
    """
    result = patch(tmp_path, "fix-training-call-order", source)
    assert diff_body(result)[-1] == "+    opt.zero_grad(); loss.backward(); opt.step()  # one line"


def test_a_working_order_is_left_alone(tmp_path):
    source = BACKWARD_ZERO_STEP.replace(
        "loss.backward()\n        opt.zero_grad()", "opt.zero_grad()\n        loss.backward()"
    )
    result = patch(tmp_path, "fix-training-call-order", source)
    assert result.diff is None and "working order" in result.note


def test_calls_in_different_blocks_are_not_guessed_at(tmp_path):
    source = BACKWARD_ZERO_STEP.replace(
        "        opt.step()", "        if x is not None:\n            opt.step()"
    )
    result = patch(tmp_path, "fix-training-call-order", source)
    assert result.diff is None and "one block" in result.note


def test_the_moves_mend_every_rotation_of_the_broken_cycle():
    assert mended(["backward", "zero_grad", "step"]) == ["zero_grad", "backward", "step"]
    assert mended(["zero_grad", "step", "f", "backward"]) == ["zero_grad", "f", "backward", "step"]
    assert mended(["step", "f", "backward", "zero_grad"]) == ["f", "backward", "step", "zero_grad"]
    for healthy in (["zero_grad", "backward", "step"], ["backward", "step", "zero_grad"]):
        assert mended(healthy) == healthy
