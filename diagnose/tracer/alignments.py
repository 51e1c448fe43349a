"""What an op's own arguments say about two nan mechanisms no statistic shows.

- A CTC loss is inf for a sample whose input is shorter than its target plus one blank between
  each pair of equal neighbours: no alignment exists (``ctc_samples``).
- A softmax is nan on a row that is -inf everywhere: 0/0 (``masked_rows``).

Both read the tensors the op was called with, once, at an event.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from diagnose.report import CtcSample

SHOWN = 8  # samples or rows named in a report; the count says how many there are in all
_SOFTMAX = {"softmax", "log_softmax", "_softmax", "_log_softmax"}


def _arg(args: tuple, kwargs: dict | None, index: int, name: str) -> Any:
    kwargs = kwargs or {}
    return kwargs[name] if name in kwargs else (args[index] if len(args) > index else None)


def _ints(value: Any) -> list[int] | None:
    if isinstance(value, torch.Tensor):
        return [int(v) for v in value.detach().reshape(-1).tolist()]
    if isinstance(value, list | tuple) and all(isinstance(v, int) for v in value):
        return list(value)
    return None


def _targets_of(targets: torch.Tensor, lengths: list[int]) -> list[list[int]] | None:
    """Each sample's target symbols: rows of a padded (N, S) tensor, or slices of the 1-D
    concatenation."""
    flat = targets.detach()
    if flat.dim() == 2 and flat.shape[0] == len(lengths):
        return [flat[i, :n].tolist() for i, n in enumerate(lengths)]
    if flat.dim() == 1 and sum(lengths) <= flat.numel():
        values, out, start = flat.tolist(), [], 0
        for n in lengths:
            out.append(values[start : start + n])
            start += n
        return out
    return None


def needed_frames(target: list[int]) -> int:
    """Input frames a CTC alignment of ``target`` needs: one per symbol, and a blank between
    two equal neighbours (``a a`` cannot be emitted without one)."""
    repeats = sum(1 for a, b in itertools.pairwise(target) if a == b)
    return len(target) + repeats


def ctc_samples(args: tuple, kwargs: dict | None) -> tuple[list[CtcSample], int] | None:
    """(the first infeasible samples, how many there are) of a ``ctc_loss`` call; None when
    its arguments cannot be read (or zero_infinity already hides them)."""
    if _arg(args, kwargs, 6, "zero_infinity") is True:
        return None
    targets = _arg(args, kwargs, 1, "targets")
    inputs = _ints(_arg(args, kwargs, 2, "input_lengths"))
    lengths = _ints(_arg(args, kwargs, 3, "target_lengths"))
    if not isinstance(targets, torch.Tensor) or inputs is None or lengths is None:
        return None
    if len(inputs) != len(lengths):
        return None
    per_sample = _targets_of(targets, lengths)
    if per_sample is None:
        return None
    bad = [
        CtcSample(sample=i, input_length=t, target_length=n, needed=needed_frames(symbols))
        for i, (t, n, symbols) in enumerate(zip(inputs, lengths, per_sample, strict=True))
        if t < needed_frames(symbols)
    ]
    return bad[:SHOWN], len(bad)


def softmax_dim(args: tuple, kwargs: dict | None) -> int | None:
    dim = _arg(args, kwargs, 1, "dim")
    return dim if isinstance(dim, int) and not isinstance(dim, bool) else None


def is_softmax(name: str) -> bool:
    return name in _SOFTMAX


def masked_rows(x: torch.Tensor, dim: int) -> tuple[list[list[int]], int, int] | None:
    """(indices of the first rows of ``x`` along ``dim`` that are -inf everywhere, how many
    there are, how many rows in all); None when there is none."""
    with torch.no_grad():
        full = (x.detach() == -math.inf).all(dim=dim)
        count = int(full.sum())
        if count == 0:
            return None
        rows = [[int(i) for i in idx] for idx in full.nonzero()[:SHOWN].tolist()]
    return rows, count, int(full.numel())
