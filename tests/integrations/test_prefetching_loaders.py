"""Frameworks iterate their DataLoader one batch ahead; the dataset rows named must still be right.

accelerate's ``DataLoaderShard`` (under the transformers Trainer) fetches the next batch before
yielding the current one "to check when we are at the end". A NaN row must be named by its own
dataset index, not by the index at the same position in the batch fetched ahead.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest
import torch
from torch import nn

from diagnose.tracer import NonFiniteDetected, Tracer


def one_batch_ahead(loader: Iterable) -> Iterator:
    """What accelerate's DataLoaderShard.__iter__ does."""
    iterator = iter(loader)
    current = next(iterator)
    for upcoming in iterator:
        yield current
        current = upcoming
    yield current


def test_a_nan_row_is_named_by_its_own_index_under_a_loader_that_fetches_ahead():
    torch.manual_seed(0)
    x = torch.randn(16, 4)
    x[5, 1] = float("nan")  # the second batch of four rows
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=4)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer()
    with pytest.raises(NonFiniteDetected), tracer:
        for (batch,) in one_batch_ahead(loader):
            model(batch).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    assert (tracer.event.phase, tracer.event.step) == ("input", 1)
    assert tracer.event.sample_indices == [5]


def _first_nan_sample(loader: Iterable, feed=lambda batch: batch) -> list[int] | None:
    model = nn.Linear(4, 1).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer()
    with pytest.raises(NonFiniteDetected), tracer:
        for (batch,) in loader:
            model(feed(batch)).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    assert tracer.event.phase == "input"
    return tracer.event.sample_indices


def _data(nan_row: int) -> torch.utils.data.TensorDataset:
    torch.manual_seed(0)
    x = torch.randn(32, 4, dtype=torch.float64)
    x[nan_row, 2] = float("nan")
    return torch.utils.data.TensorDataset(x)


def test_worker_processes_prefetching_several_batches_still_name_the_right_row():
    loader = torch.utils.data.DataLoader(_data(13), batch_size=4, num_workers=2, prefetch_factor=2)
    assert _first_nan_sample(loader) == [13]


def test_a_shuffled_batch_copied_and_cast_before_the_model_is_matched_by_content():
    torch.manual_seed(1)
    loader = torch.utils.data.DataLoader(_data(21), batch_size=8, shuffle=True)
    assert _first_nan_sample(
        one_batch_ahead(loader), feed=lambda b: b.float().double().clone()
    ) == [21]
