"""Which dataset indices made up the batch being fed to the model.

The DataLoader's iterator asks its sampler for the next batch of indices in
``_next_index``; with ``num_workers=0`` that batch is the one returned next, so the last
indices seen are the current batch's. With workers, batches are prefetched and the
mapping is uncertain, so no indices are claimed.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import dataloader as _dl


class BatchIndices:
    """Patches ``_BaseDataLoaderIter._next_index`` while installed; restores it on uninstall."""

    def __init__(self) -> None:
        self.last: list[int] | None = None
        self._original: Any = None

    def install(self) -> None:
        original = _dl._BaseDataLoaderIter._next_index
        self._original = original
        watcher = self

        def _next_index(it: Any) -> Any:
            index = original(it)
            if getattr(it, "_num_workers", 0) == 0:
                try:
                    watcher.last = [int(i) for i in index]
                except TypeError:
                    watcher.last = None
            else:
                watcher.last = None
            return index

        _dl._BaseDataLoaderIter._next_index = _next_index

    def uninstall(self) -> None:
        if self._original is not None:
            _dl._BaseDataLoaderIter._next_index = self._original
            self._original = None
