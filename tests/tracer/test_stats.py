"""The statistics kept per tensor: headroom, near-limit flags, |x| minima, odd tensors."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from diagnose.tracer.stats import (
    dtype_max,
    full_stats,
    host_stats,
    iter_tensors,
    local_tensor,
    nonfinite_kind,
)


def test_headroom_is_the_dtype_limit_over_the_largest_magnitude():
    s = full_stats("x", torch.tensor([-2.0, 1.0], dtype=torch.float16))
    assert s.abs_max == 2.0 and s.headroom == pytest.approx(65504 / 2.0)
    assert not s.near_limit


def test_values_within_a_factor_of_two_of_the_limit_are_near_limit():
    near = full_stats("x", torch.tensor([40000.0], dtype=torch.float16))
    far = full_stats("x", torch.tensor([30000.0], dtype=torch.float16))
    assert near.near_limit and near.headroom < 2
    assert not far.near_limit and far.headroom > 2


def test_the_same_value_is_near_the_limit_in_fp16_but_not_in_fp32():
    assert full_stats("x", torch.tensor([4e4], dtype=torch.float16)).near_limit
    assert not full_stats("x", torch.tensor([4e4], dtype=torch.float32)).near_limit
    assert not full_stats("x", torch.tensor([4e4], dtype=torch.bfloat16)).near_limit


def test_abs_min_is_the_smallest_non_zero_magnitude():
    s = full_stats("x", torch.tensor([0.0, -3e-5, 2.0, 0.0]))
    assert s.abs_min == pytest.approx(3e-5) and s.abs_max == 2.0
    assert s.nan == 0 and s.inf == 0 and s.finite


def test_all_zero_tensor_has_abs_min_zero_and_no_headroom():
    s = full_stats("x", torch.zeros(3))
    assert s.abs_min == 0.0 and s.abs_max == 0.0 and s.headroom is None


def test_nan_and_inf_are_counted_and_the_finite_part_still_summarised():
    s = full_stats("x", torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), 0.5]))
    assert (s.nan, s.inf) == (1, 2)
    assert math.isnan(s.abs_max) and s.abs_min == 0.5 and not s.finite


def test_host_stats_from_a_min_max_pair():
    crossing = host_stats("o", torch.float32, (2, 3), -4.0, 3.0)
    assert crossing.abs_max == 4.0 and crossing.abs_min is None  # zero may lie in between
    positive = host_stats("o", torch.float16, (1,), 2.0, 5e4)
    assert positive.abs_min == 2.0 and positive.near_limit and positive.shape == [1]
    assert host_stats("o", torch.float32, (1,), 1.0, math.inf).abs_max == math.inf
    assert math.isnan(host_stats("o", torch.float32, (1,), math.nan, 1.0).abs_max)


@pytest.mark.parametrize(
    "tensor",
    [
        torch.tensor([True, False]),
        torch.tensor([1, 2, 3]),
        torch.empty(0, 4),
        torch.empty(3, device="meta"),
    ],
    ids=["bool", "int", "empty", "meta"],
)
def test_tensors_without_values_to_check_give_shape_and_dtype_only(tensor):
    s = full_stats("t", tensor)
    assert s.dtype == str(tensor.dtype).removeprefix("torch.") and s.shape == list(tensor.shape)
    assert s.abs_max is None and s.finite


def test_local_tensor_has_nothing_to_reduce_for_empty_and_meta():
    assert local_tensor(torch.empty(0)) is None
    assert local_tensor(torch.empty(2, device="meta")) is None
    x = torch.ones(2)
    assert local_tensor(x) is x


def test_integer_dtypes_have_no_float_limit():
    assert dtype_max(torch.int64) is None and dtype_max(torch.bool) is None
    assert dtype_max(torch.float16) == 65504.0


@dataclasses.dataclass
class _Out:
    logits: torch.Tensor
    extra: tuple


def test_iter_tensors_walks_dicts_lists_tuples_and_dataclasses():
    a, b, c = torch.ones(1), torch.zeros(2), torch.ones(3)
    found = dict(iter_tensors({"x": [a, (b, None)], "d": _Out(c, (1, "s"))}, "out"))
    assert set(found) == {"out.x[0]", "out.x[1][0]", "out.d.logits"}
    assert found["out.d.logits"] is c


def test_iter_tensors_reads_a_transformers_model_output():
    from transformers.modeling_outputs import CausalLMOutput

    logits, loss = torch.randn(2, 3), torch.tensor(1.0)
    found = dict(iter_tensors(CausalLMOutput(loss=loss, logits=logits), "output"))
    assert found == {"output.loss": loss, "output.logits": logits}


def test_nonfinite_kind():
    assert nonfinite_kind(math.nan, 1.0) == "nan"
    assert nonfinite_kind(0.0, math.inf) == "inf"
    assert nonfinite_kind(-math.inf, 0.0) == "-inf"
    assert nonfinite_kind(-math.inf, math.inf) == "inf+-inf"


def test_signed_bounds_and_zero_count_tell_zero_from_negative():
    s = full_stats("x", torch.tensor([0.0, -0.5, 2.0, 0.0, float("nan")]))
    assert (s.min, s.max, s.zeros) == (-0.5, 2.0, 2)
    positive = full_stats("x", torch.tensor([0.25, 2.0]))
    assert (positive.min, positive.zeros) == (0.25, 0)


def test_integer_tensors_get_bounds_and_zero_count_but_no_magnitudes():
    s = full_stats("target", torch.tensor([-100, 3, 0, -100]))
    assert (s.min, s.max, s.zeros) == (-100, 3, 1)
    assert s.abs_max is None and s.finite
    flags = full_stats("mask", torch.tensor([True, False]))
    assert flags.min is None and flags.zeros is None
