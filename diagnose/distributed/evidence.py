"""Per-rank evidence in the launch's store: published by each rank, gathered by one.

Keys, under the launch's namespace:
- ``evidence/<rank>/<i>``: chunks of the rank's evidence (zlib-compressed JSON); a TCPStore
  refuses a value over 8 MiB, so a large report travels in pieces;
- ``evidence/<rank>``: the number of chunks, set last, so a reader never sees half of it;
- ``terminal``: the first rank to end the run (event, exception or stop), set once;
- ``alive/<rank>``: a counter the rank's watcher bumps while it runs, so that the rank that
  gathers stops waiting for a rank that died without a word.
"""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

TERMINAL = ("nonfinite", "exception", "interrupted", "stopped")
"""A rank that ended with one of these ends the whole run."""
CHUNK = 4 * 1024 * 1024
"""Bytes per stored value: well under the TCPStore's 8 MiB limit on one message."""
MAX_BYTES = 64 * 1024 * 1024
"""Compressed evidence above this drops the full report and keeps the rank's summary."""
STALE_S = 10.0
"""A missing rank whose heartbeat has not moved for this long is given up on."""
POLL_S = 0.1


def publish(store: Any, rank: int, data: dict[str, Any]) -> int:
    """Store this rank's evidence; readers see all of it or none of it. Returns the number
    of bytes stored."""
    blob = zlib.compress(json.dumps(data).encode("utf-8"), 6)
    if len(blob) > MAX_BYTES and "report" in data:
        slim = {k: v for k, v in data.items() if k != "report"}
        slim["report_dropped_bytes"] = len(blob)
        blob = zlib.compress(json.dumps(slim).encode("utf-8"), 6)
    chunks = [blob[i : i + CHUNK] for i in range(0, len(blob), CHUNK)] or [b""]
    for i, chunk in enumerate(chunks):
        store.set(f"evidence/{rank}/{i}", chunk)
    store.set(f"evidence/{rank}", str(len(chunks)))
    return len(blob)


def read_one(store: Any, rank: int) -> dict[str, Any] | None:
    """One rank's evidence, or None if it has published none (or it cannot be read)."""
    key = f"evidence/{rank}"
    if not store.check([key]):
        return None
    try:
        count = int(store.get(key))
        blob = b"".join(bytes(store.get(f"evidence/{rank}/{i}")) for i in range(count))
        data = json.loads(zlib.decompress(blob))
    except (ValueError, zlib.error):
        return None
    return data if isinstance(data, dict) else None


def read_all(store: Any, world_size: int) -> dict[int, dict[str, Any]]:
    """Every rank's evidence that is there now, by rank."""
    found = {}
    for rank in range(world_size):
        data = read_one(store, rank)
        if data is not None:
            found[rank] = data
    return found


def gather(
    store: Any, world_size: int, stale_s: float = STALE_S, poll_s: float = POLL_S
) -> dict[int, dict[str, Any]]:
    """Wait until every rank has published, or every missing rank has gone quiet.

    A rank still running (its heartbeat moves) is waited for as long as it runs; one that
    died (no heartbeat for ``stale_s``, measured on this clock only) is left missing.
    """
    found: dict[int, dict[str, Any]] = {}
    seen: dict[int, tuple[int, float]] = {}
    while True:
        for rank in range(world_size):
            if rank not in found:
                data = read_one(store, rank)
                if data is not None:
                    found[rank] = data
        missing = [r for r in range(world_size) if r not in found]
        if not missing:
            return found
        now = time.monotonic()
        quiet = True
        for rank in missing:
            beats = store.add(f"alive/{rank}", 0)
            last = seen.get(rank)
            if last is None or last[0] != beats:
                seen[rank] = last = (beats, now)
            quiet = quiet and now - last[1] >= stale_s
        if quiet:
            return found
        time.sleep(poll_s)


def beat(store: Any, rank: int) -> int:
    """Say this rank is still running; returns how many times it has said so."""
    return int(store.add(f"alive/{rank}", 1))


def claim_terminal(store: Any, rank: int, status: str, when: float) -> dict[str, Any]:
    """Record this rank as the one that ended the run unless another did first; the
    holder's record either way."""
    mine = json.dumps({"rank": rank, "status": status, "time": when})
    return _parse(store.compare_set("terminal", "", mine))


def terminal(store: Any) -> dict[str, Any] | None:
    """The rank that ended the run first, if one has."""
    if not store.check(["terminal"]):
        return None
    return _parse(store.get("terminal"))


def forget(store: Any, world_size: int) -> None:
    """Remove this launch's keys once its report is combined (the store outlives it)."""
    keys = ["terminal"]
    for rank in range(world_size):
        keys += [f"alive/{rank}", f"evidence/{rank}"]
        try:
            count = int(store.get(f"evidence/{rank}")) if store.check([f"evidence/{rank}"]) else 0
        except ValueError:
            count = 0
        keys += [f"evidence/{rank}/{i}" for i in range(count)]
    for key in keys:
        store.delete_key(key)


def _parse(raw: Any) -> dict[str, Any]:
    try:
        data = json.loads(bytes(raw))
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
