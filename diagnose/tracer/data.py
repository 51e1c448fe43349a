"""Which dataset indices made up a batch fed to the model.

A DataLoader's iterator asks its sampler for a batch of indices in ``_next_index`` and hands
out batches in the same order (in-order delivery, the default, also with worker processes).
Loaders fetch ahead: worker processes prefetch several batches, and accelerate's
``DataLoaderShard`` (under the transformers Trainer) takes the next batch before yielding the
current one. So "the last indices asked for" is not the batch the model is fed. Instead, each
iterator keeps a queue of the index batches it asked for; when ``__next__`` returns a batch
the oldest entry is its indices, and the batch's tensors are remembered with them. At an
event, the tensor fed to the model is matched to a remembered batch by storage (the same
tensor, a view, or ``.to()`` of the same device) or, failing that (a copy to another device,
a dtype cast), by the content of the offending row.

A remembered batch also tells whether a non-finite tensor was finite when the loader gave it:
rows that a cast of the loader's rows to the tensor's dtype reproduces exactly, inf for inf,
overflowed in that cast (``cast_overflow``: a float32 batch cast to float16 by a precision
plugin, ``.half()`` or ``.to(torch.float16)``).
"""

from __future__ import annotations

import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import dataloader as _dl

from diagnose.tracer.stats import dtype_name, iter_tensors

_KEPT_BATCHES = 4  # the batch being used, one fetched ahead, and some slack
_CAST_ROWS = 64  # rows compared to tell a cast overflow (an event's cost, not a step's)


@dataclass
class CastOverflow:
    """Rows that were finite in the loader's batch and became inf when cast to ``dtype``."""

    source_dtype: str
    dtype: str
    max_abs: float  # the largest |x| of those rows as the loader gave them
    rows: int  # how many of the tensor's non-finite rows the cast explains (those compared)
    indices: list[int]  # their dataset indices


class BatchIndices:
    """Patches the DataLoader iterator while installed; restores it on uninstall."""

    def __init__(self) -> None:
        self.last: list[int] | None = None  # indices of the batch handed out last
        self._batches: deque[tuple[list[torch.Tensor], list[int]]] = deque(maxlen=_KEPT_BATCHES)
        self._asked: weakref.WeakKeyDictionary[Any, deque[list[int] | None]] = (
            weakref.WeakKeyDictionary()
        )
        self._originals: dict[str, Any] = {}

    def install(self) -> None:
        base = _dl._BaseDataLoaderIter
        self._originals = {
            "_next_index": base._next_index,
            "_reset": base._reset,
            "__next__": base.__next__,
        }
        next_index, reset, next_ = (
            self._originals[k] for k in ("_next_index", "_reset", "__next__")
        )
        watcher = self

        def _next_index(it: Any) -> Any:
            index = next_index(it)
            watcher._queue(it).append(_as_indices(index))
            return index

        def _reset(it: Any, *args: Any, **kwargs: Any) -> Any:
            watcher._queue(it).clear()  # a new epoch: batches asked for earlier are dropped
            return reset(it, *args, **kwargs)

        def __next__(it: Any) -> Any:
            data = next_(it)
            queue = watcher._queue(it)
            indices = queue.popleft() if queue else None
            if not getattr(it, "_in_order", True):
                indices = None  # batches may come back in any order: no claim
            watcher._remember(data, indices)
            return data

        base._next_index = _next_index
        base._reset = _reset
        base.__next__ = __next__

    def uninstall(self) -> None:
        base = _dl._BaseDataLoaderIter
        for name, original in self._originals.items():
            setattr(base, name, original)
        self._originals = {}
        self._batches.clear()

    def _queue(self, it: Any) -> deque[list[int] | None]:
        queue = self._asked.get(it)
        if queue is None:
            queue = self._asked[it] = deque()
        return queue

    def _remember(self, data: Any, indices: list[int] | None) -> None:
        self.last = indices
        if indices is None:
            return
        tensors = [
            t for _, t in iter_tensors(data, "batch") if t.dim() and t.shape[0] == len(indices)
        ]
        if tensors:
            self._batches.append((tensors, indices))

    def lookup(self, t: torch.Tensor, rows: list[int]) -> list[int] | None:
        """Dataset indices of ``rows`` of ``t`` (a tensor fed to the model), or None."""
        if not rows or t.dim() == 0:
            return None
        for tensors, indices in reversed(self._batches):
            if len(indices) != t.shape[0]:
                continue
            if any(_same_storage(t, b) for b in tensors):
                return [indices[r] for r in rows]
        for tensors, indices in reversed(self._batches):
            if len(indices) != t.shape[0]:
                continue
            if any(_same_row(t, b, rows[0]) for b in tensors):
                return [indices[r] for r in rows]
        return None

    def holds_shape_of(self, t: torch.Tensor) -> bool:
        """Whether a remembered batch has a tensor of ``t``'s shape in another dtype (else
        ``t`` cannot be a cast of the loader's batch: no need to look at its values)."""
        return any(
            b.shape == t.shape and b.dtype != t.dtype
            for tensors, _ in self._batches
            for b in tensors
        )

    def cast_overflow(self, t: torch.Tensor, rows: list[int]) -> CastOverflow | None:
        """Whether the non-finite ``rows`` of ``t`` are the loader's finite rows cast to
        ``t``'s dtype (the cast reproduces them exactly), and what they held before."""
        if not rows or t.dim() == 0 or not t.is_floating_point():
            return None
        rows = rows[:_CAST_ROWS]
        for tensors, indices in reversed(self._batches):
            for b in tensors:
                if b.shape != t.shape or b.dtype in (t.dtype, torch.bool) or b.is_complex():
                    continue  # integer sources count: int64 prices cast to half overflow too
                try:
                    with torch.no_grad():
                        source = b.detach()[rows]
                        if not bool(torch.isfinite(source).all()):
                            continue
                        cast = source.to(t.dtype)
                        got = t.detach()[rows].to(cast.device)
                        same = (cast == got) | (cast.isnan() & got.isnan())
                        if not bool(same.all()) or bool(torch.isfinite(got).all()):
                            continue
                        largest = float(source.abs().max())
                except Exception:  # a tensor the comparison cannot take: no claim
                    continue
                return CastOverflow(
                    dtype_name(b.dtype),
                    dtype_name(t.dtype),
                    largest,
                    len(rows),
                    [indices[r] for r in rows],
                )
        return None


def _as_indices(index: Any) -> list[int] | None:
    try:
        return [int(i) for i in index]
    except (TypeError, ValueError):
        return None


def _same_storage(t: torch.Tensor, b: torch.Tensor) -> bool:
    if t is b:
        return True
    if t.device != b.device or t.shape[0] != b.shape[0]:
        return False
    try:
        return t.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except Exception:
        return False


def _same_row(t: torch.Tensor, b: torch.Tensor, row: int) -> bool:
    """Row ``row`` of ``t`` equals row ``row`` of ``b`` (nan equal to nan)."""
    try:
        if t[row].numel() != b[row].numel():
            return False
        with torch.no_grad():
            x = t[row].detach().reshape(-1).to(b.device, torch.float64)
            y = b[row].detach().reshape(-1).to(torch.float64)
            return bool(((x == y) | (x.isnan() & y.isnan())).all())
    except Exception:
        return False
