"""Whether a non-finite batch was finite as the DataLoader gave it: BatchIndices.cast_overflow."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils.data import DataLoader, TensorDataset

from diagnose.tracer.data import BatchIndices


@contextmanager
def _first_batch(data: torch.Tensor) -> Iterator[tuple[BatchIndices, torch.Tensor]]:
    """The first batch of a DataLoader over ``data``, under a watch that remembers it."""
    watch = BatchIndices()
    watch.install()
    try:
        (batch,) = next(iter(DataLoader(TensorDataset(data), batch_size=4, shuffle=False)))
        yield watch, batch
    finally:
        watch.uninstall()


def _bad_rows(t: torch.Tensor) -> list[int]:
    return (~torch.isfinite(t)).reshape(t.shape[0], -1).any(1).nonzero().flatten().tolist()


def test_float32_rows_past_65504_cast_to_half_are_a_cast_overflow():
    features = torch.ones(8, 3)
    features[2, 1] = 1.0e5
    with _first_batch(features) as (watch, batch):
        half = batch.half()
        found = watch.cast_overflow(half, _bad_rows(half))
    assert found is not None
    assert (found.source_dtype, found.dtype, found.max_abs) == ("float32", "float16", 1.0e5)
    assert (found.rows, found.indices) == (1, [2])


def test_integer_counts_cast_to_half_overflow_too():
    counts = torch.arange(24).reshape(8, 3)
    counts[1, 0] = 70000
    with _first_batch(counts) as (watch, batch):
        found = watch.cast_overflow(batch.half(), [1])
    assert found is not None and found.source_dtype == "int64" and found.indices == [1]


def test_data_that_is_inf_in_the_loader_or_changed_after_it_is_no_cast():
    features = torch.ones(8, 3)
    features[0, 0] = float("inf")  # the data itself
    with _first_batch(features) as (watch, batch):
        assert watch.cast_overflow(batch.half(), [0]) is None
    with _first_batch(torch.ones(8, 3)) as (watch, batch):
        scaled = (batch * 1e5).half()  # the script's own arithmetic made it inf, not a cast
        assert watch.cast_overflow(scaled, _bad_rows(scaled)) is None
