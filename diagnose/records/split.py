"""One big JSON Lines file validated by several worker processes, into one cache entry.

The lines are cut into one piece per worker at line ends. Each worker validates its piece
exactly as the serial parser does (``parse.parse_lines``: line numbers count from the piece's
first line in the file) and appends its records as entry parts to one new file, opened by each
with ``O_APPEND`` so every part lands whole at the end, wherever the others are; it replies
with where its parts are and its findings. The parent then appends the header (parts in
file order, the findings in file order) and writes the prefix, renames the file into the cache
(only when the file did not change while it was read, as ``cache.store``) and opens it as a warm
load does. While the workers run, the parent computes the entry's key (hashing a racy file).

A piece a worker did not deliver is validated by the parent the same way. A file that turns out
not to be UTF-8 (the serial parser then reports the file as a whole) is left to the serial
parser: None.
"""

from __future__ import annotations

import contextlib
import itertools
import marshal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from diagnose.records import cache, entry, forked, parallel
from diagnose.records.parse import Parsed, json_lines_start, parse_lines

PART_RECORDS = 16384  # records per part: one write each (~30 MB), well under a write's limit
_SERIAL = marshal.dumps(("serial",))


def _cuts(data: bytes, start: int, pieces: int) -> list[int]:
    """Offsets where pieces begin (each just after a line end), then ``len(data)``."""
    cuts = [start]
    for k in range(1, pieces):
        at = data.find(b"\n", start + (len(data) - start) * k // pieces) + 1
        if at <= cuts[-1] or at >= len(data):
            continue
        cuts.append(at)
    cuts.append(len(data))
    return cuts


def _piece(tmp: Path, data: bytes, start: int, end: int, check_utf8: bool) -> bytes:
    """Validate ``data[start:end]`` and append its records to ``tmp`` as parts; the reply."""
    if check_utf8:
        try:
            data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            return _SERIAL
    first_line = data.count(b"\n", 0, start) + 1
    parsed = parse_lines(data, start, end, b"" if check_utf8 else data, first_line)
    if parsed is None:
        return _SERIAL
    parts: list[entry.PartRef] = []
    records, where = parsed.records, parsed.where
    if records:
        fd = os.open(tmp, os.O_WRONLY | os.O_APPEND)
        try:
            for i in range(0, len(records), PART_RECORDS):
                body, count, offsets = entry.encode_part(
                    records[i : i + PART_RECORDS], where[i : i + PART_RECORDS]
                )
                if os.write(fd, body) != len(body):
                    raise OSError("short write")
                parts.append((os.lseek(fd, 0, os.SEEK_CUR) - len(body), count, offsets))
        finally:
            os.close(fd)
    return marshal.dumps(("ok", parts, parsed.findings))


def parse_split(
    path: Path, data: bytes, suffix: str, st: os.stat_result, read_started_ns: int, publish: bool
) -> Parsed | None:
    """``parse_bytes(data, suffix)`` done by worker processes, with its entry stored for
    ``path`` when ``publish``; None when this does not pay or does not apply (parse serially)."""
    shape = json_lines_start(data, suffix)
    workers = parallel.workers_for(len(data)) if shape is not None else 0
    if shape is None or workers < 2:
        return None
    start, check_utf8 = shape
    cuts = _cuts(data, start, workers)
    if len(cuts) < 3:
        return None
    with cache.workers_store(private=not publish) as folder:
        target = cache.entry_target(path) or folder / "entry"
        tmp = cache.temp_name(target)
        try:
            return _run(
                data,
                cuts,
                check_utf8,
                tmp,
                target,
                lambda: cache.key_for(st, data, read_started_ns),
            )
        except OSError:
            return None
        finally:
            if tmp.exists():
                tmp.unlink()


def _run(
    data: bytes,
    cuts: list[int],
    check_utf8: bool,
    tmp: Path,
    target: Path,
    key: Callable[[], tuple[Any, ...]],
) -> Parsed | None:
    """Workers validate the pieces between ``cuts`` into parts of ``tmp`` (the parent the
    pieces they do not deliver); the header goes last, then ``tmp`` becomes ``target``."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, bytes(entry.PREFIX))  # the prefix, written last
    finally:
        os.close(fd)
    pieces = list(itertools.pairwise(cuts))

    def task(start: int, end: int) -> Callable[[], bytes]:
        return lambda: _piece(tmp, data, start, end, check_utf8)

    with forked.Forked([task(start, end) for start, end in pieces]) as running:
        entry_key = key()  # meanwhile
        replies = running.wait(parallel.timeout_for(len(data)))
    parts: list[entry.PartRef] = []
    findings: list[Any] = []
    for (start, end), reply in zip(pieces, replies, strict=True):
        answer = marshal.loads(
            reply if reply is not None else _piece(tmp, data, start, end, check_utf8)
        )
        if answer[0] != "ok":
            return None
        parts.extend(answer[1])
        findings.extend(answer[2])
    header = entry.encode_header(entry_key, None, findings, parts)
    fd = os.open(tmp, os.O_WRONLY)
    try:
        header_at = os.fstat(fd).st_size
        os.pwrite(fd, header, header_at)
        os.pwrite(fd, entry.encode_prefix(header_at, len(header)), 0)
    finally:
        os.close(fd)
    opened = entry.open_entry(tmp)  # before the rename: what is opened is what was written
    if opened is None:
        return None
    with contextlib.suppress(OSError):  # if not stored, still read: whole, or mapped
        os.replace(tmp, target)
    return opened.parsed()
