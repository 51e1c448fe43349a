"""Watching chosen module instances through their classes, leaving the instances untouched."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from diagnose.tracer.roots import RAISED, RootCalls


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class Deeper(Net):
    pass


class Doubling(nn.Module):
    """A class with its own ``__call__``, as some scripts write."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return super().__call__(x * 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


def recorder() -> tuple[list, RootCalls]:
    calls: list = []
    watch = RootCalls(
        lambda m, args: calls.append(("before", m)),
        lambda m, args, kwargs, out: calls.append(("after", m, out is RAISED)),
    )
    return calls, watch


def test_only_the_watched_instances_are_seen_and_nothing_is_put_on_them():
    calls, watch = recorder()
    model, other = Net(), Net()
    watch.watch([model])
    try:
        model(torch.ones(1, 2))
        other(torch.ones(1, 2))
        copy.deepcopy(model)(torch.ones(1, 2))
    finally:
        watch.stop()
    assert calls == [("before", model), ("after", model, False)]
    assert not model._forward_hooks and not model._forward_pre_hooks
    assert "__call__" not in vars(model) and "__call__" not in vars(Net)


def test_a_subclass_and_its_base_both_watched_see_each_call_once():
    calls, watch = recorder()
    base, deeper = Net(), Deeper()
    watch.watch([deeper, base])
    try:
        deeper(torch.ones(1, 2))
        base(torch.ones(1, 2))
    finally:
        watch.stop()
    assert [c[:2] for c in calls] == [
        ("before", deeper),
        ("after", deeper),
        ("before", base),
        ("after", base),
    ]
    assert "__call__" not in vars(Deeper) and "__call__" not in vars(Net)


def test_a_class_with_its_own_call_keeps_it_and_gets_it_back():
    calls, watch = recorder()
    own = vars(Doubling)["__call__"]
    model = Doubling()
    watch.watch([model])
    try:
        assert model(torch.ones(1)).item() == 3
    finally:
        watch.stop()
    assert len(calls) == 2 and vars(Doubling)["__call__"] is own


def test_a_raising_call_is_reported_and_the_error_goes_on():
    calls, watch = recorder()
    model = Net()
    watch.watch([model])
    try:
        with pytest.raises(RuntimeError):
            model(torch.ones(1, 3))  # wrong width
    finally:
        watch.stop()
    assert calls[-1] == ("after", model, True)


def test_a_call_kept_by_other_code_passes_through_once_watching_stops():
    calls, watch = recorder()
    model = Net()
    watch.watch([model])
    kept = type(model).__call__  # what torch.compile's wrapper keeps of model.__call__
    watch.stop()
    assert torch.equal(kept(model, torch.ones(1, 2)), model(torch.ones(1, 2)))
    assert calls == [] and kept.__diagnose_root_call__.before is None


def test_two_watches_stopped_out_of_order_leave_the_class_as_it_was():
    first_calls, first = recorder()
    second_calls, second = recorder()
    model = Net()
    first.watch([model])
    second.watch([model])
    model(torch.ones(1, 2))
    first.stop()
    second.stop()
    assert "__call__" not in vars(Net)
    assert len(first_calls) == len(second_calls) == 2
