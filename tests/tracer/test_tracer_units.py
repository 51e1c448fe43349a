"""Unit behaviour of the Tracer: odd tensors, nested outputs, masks, and leaving no trace."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from diagnose.tracer import NonFiniteDetected, Tracer


class Odd(nn.Module):
    def forward(self, x: torch.Tensor) -> dict:
        return {
            "mask": x > 0,
            "ids": x.long(),
            "empty": x[:0],
            "meta": torch.empty(3, device="meta"),
            "nested": [(x * 2,)],
        }


def test_bool_int_empty_meta_and_nested_outputs_do_not_crash():
    with Tracer() as tracer:
        Odd()(torch.randn(4, 3))
    assert tracer.report().status == "clean"


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_a_transformer_encoder_fast_path_with_nested_tensors_stays_clean():
    # eval() + no_grad() + a padding mask: TransformerEncoder runs its layers on nested
    # tensors, which have no single shape and no aminmax of their own.
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    encoder.eval()
    with Tracer(detail_every=1) as tracer, torch.no_grad():
        out = encoder(torch.randn(2, 5, 8), src_key_padding_mask=pad)
    assert torch.isfinite(out).all()
    report = tracer.report()
    assert report.status == "clean" and report.warnings == []
    assert any(f.module == "layers.0" for f in report.frames)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_a_nan_in_a_nested_tensor_is_found():
    class Ragged(nn.Module):
        def forward(self, x):
            return torch.nested.nested_tensor([x[:2].log(), x[2:]])

    with pytest.raises(NonFiniteDetected) as info, Tracer():
        Ragged()(torch.tensor([-1.0, 1.0, 2.0]))
    assert info.value.event.phase == "forward"


def test_what_the_tracer_cannot_record_is_reported_and_the_script_goes_on():
    class Opaque(torch.Tensor):  # a subclass whose reductions fail
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is torch.aminmax:
                raise NotImplementedError("aminmax is not supported here")
            return super().__torch_function__(func, types, args, kwargs or {})

    class Wrap(nn.Module):
        def forward(self, x):
            return (x * 2).as_subclass(Opaque)

    with Tracer() as tracer:
        out = Wrap()(torch.randn(3))
    assert isinstance(out, Opaque)
    assert tracer.report().warnings == [
        "tracer: a call of `Wrap` (Wrap) was not recorded: NotImplementedError: aminmax is not "
        "supported here"
    ]


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
