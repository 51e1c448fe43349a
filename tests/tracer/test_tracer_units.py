"""Unit behaviour of the Tracer: odd tensors, nested outputs, masks, and leaving no trace."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from diagnose.tracer import NonFiniteDetected, Tracer


class Odd(nn.Module):
    def forward(self, x: torch.Tensor) -> dict:
        return {"mask": x > 0, "ids": x.long(), "empty": x[:0], "meta": torch.empty(3, device="meta"),
                "nested": [(x * 2,)]}


def test_bool_int_empty_meta_and_nested_outputs_do_not_crash():
    with Tracer() as tracer:
        Odd()(torch.randn(4, 3))
    assert tracer.report().status == "clean"


def test_nan_inside_a_nested_dict_output_is_found():
    class Bad(nn.Module):
        def forward(self, x):
            return {"a": [(x, x.log())]}

    with pytest.raises(NonFiniteDetected) as info, Tracer():
        Bad()(torch.tensor([-1.0, 1.0]))
    assert info.value.event.op == "log" and info.value.event.phase == "forward"


def test_a_consumed_minus_inf_mask_is_not_an_event():
    class Masked(nn.Module):
        def forward(self, x):
            scores = x.masked_fill(torch.eye(4, dtype=torch.bool), float("-inf"))
            return torch.softmax(scores, dim=-1)

    with Tracer() as tracer:
        Masked()(torch.randn(4, 4))
    assert tracer.report().status == "clean"


def test_every_hook_and_patch_is_removed_on_exit_even_after_an_event():
    backward = torch.Tensor.backward
    hooks = dict(torch.nn.modules.module._global_forward_hooks)
    with pytest.raises(NonFiniteDetected), Tracer():
        nn.Linear(2, 2)(torch.tensor([[float("nan"), 1.0]]))
    assert torch.Tensor.backward is backward
    assert dict(torch.nn.modules.module._global_forward_hooks) == hooks
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_relu_inplace_training_runs_under_backward_watch():
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True), nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Tracer(backward=True) as tracer:
        for _ in range(3):
            model(torch.randn(5, 3)).sum().backward()
            opt.step()
            opt.zero_grad()
    assert tracer.report().status == "clean" and len(tracer.report().history) == 3
