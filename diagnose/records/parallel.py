"""When a cold load uses several processes, and the folder case of it.

Validation is CPU-bound Python and pydantic work under the GIL, so a second core helps only
through a second process. Worker processes are forked (no re-import, the input bytes are
shared copy-on-write) and hand their results over as cache entries, the format a warm load
reads lazily: the parent never builds the records itself, it only opens what the workers wrote.

* A big JSON Lines file (or a file of one JSON value per line) is split into pieces of whole
  lines, one per worker, and becomes one entry of several parts (``split.py``).
* The files of a folder that the cache does not hold yet are shared out among workers in
  contiguous groups of about equal size; each worker stores each of its files' entries exactly
  as a serial load would (``prefetch``), and the parent then reads the folder as usual, now
  finding every file in the cache.

It pays only above ``MIN_BYTES`` of input to validate, with more than one usable CPU, where
``fork`` exists, and never inside a worker. Whatever a worker does not deliver (it crashed,
raised, was killed, ran past ``timeout_for``) the parent does itself, as a serial load would.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from diagnose.records import cache, forked

# Below this many bytes of cold input the work stays in the process (benchmarks/bench_loader.py:
# 7.8 MB took 102 ms serially, 122 ms with two workers; 15.6 MB 205 and 188 ms; 31 MB 589 and
# 328 ms, with another job running).
MIN_BYTES = 16 << 20
MAX_WORKERS = 8
# A worker that has not answered after this long is killed and its work done by the parent.
TIMEOUT_BASE_S = 10.0
TIMEOUT_BYTES_PER_S = 10e6  # ~10x slower than validation runs here


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers_for(nbytes: int) -> int:
    """How many worker processes to validate ``nbytes`` of cold input with (0: none)."""
    if nbytes < MIN_BYTES or not forked.can_fork():
        return 0
    cpus = min(usable_cpus(), MAX_WORKERS)
    return cpus if cpus > 1 else 0


def timeout_for(nbytes: int) -> float:
    """How long to wait for workers validating ``nbytes`` in all before doing it here."""
    return TIMEOUT_BASE_S + nbytes / TIMEOUT_BYTES_PER_S


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _groups(paths: list[Path], sizes: list[int], count: int) -> list[list[Path]]:
    """``paths`` cut into at most ``count`` contiguous runs of about equal total size."""
    total = sum(sizes)
    groups: list[list[Path]] = [[]]
    done = 0
    for path, size in zip(paths, sizes, strict=True):
        if groups[-1] and done >= total * len(groups) / count and len(groups) < count:
            groups.append([])
        groups[-1].append(path)
        done += size
    return groups


@contextmanager
def prefetched(paths: list[Path], read: Callable[[Path], object]) -> Iterator[None]:
    """While open, the cache holds what ``read`` (a serial read of one file that stores its
    entry) made of each of ``paths``, made by worker processes when that pays; files a worker
    did not store are simply not there, and the caller's own read does them."""
    sizes = [_size(path) for path in paths]
    workers = workers_for(sum(sizes)) if len(paths) > 1 else 0
    if workers < 2:
        yield
        return
    groups = _groups(paths, sizes, workers)
    with cache.workers_store():

        def task(group: list[Path]) -> Callable[[], bytes]:
            def run() -> bytes:
                for path in group:
                    read(path)
                return b"done"

            return run

        with forked.Forked([task(group) for group in groups]) as running:
            running.wait(timeout_for(sum(sizes)))
        yield
