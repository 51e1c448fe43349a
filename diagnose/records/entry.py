"""The on-disk form of one cached record file, read lazily.

Layout: ``MAGIC``, the header length (4 bytes, little endian), the header, then sections::

    header   marshal (FORMAT, key, not_records, findings, count, block size, section offsets)
    hot      marshal: one list per ``HOT_FIELDS`` field, each value for every record
    where    marshal: (line, index, json path prefix) per record (for duplicate reports)
    blocks   marshal: ``BLOCK`` records each, a record as its model's field dict

Opening an entry reads the header and, when the caller asks for the result, the hot columns:
that is all a warm load decodes. A record becomes a model when first read, its whole block at
once, without validation (it was validated before it was stored). Big entries are memory-mapped,
so the blocks nobody reads are never even read from disk; that is safe because entries are only
ever replaced by renaming a new file over them, never changed in place (``cache._write``).

Why marshal of field dicts: it is the fastest way this Python has to turn bytes back into
strings and lists (2-3x faster than pickle of the same values, 5x faster than pickled models),
records hold only str, int, None and lists of str, and a model's own ``__dict__`` needs no
copying either way (measured on 100k records: dump 0.19 s, load 0.44 s; tuples of values
0.33 s and 0.55 s with the dict rebuilt).
"""

from __future__ import annotations

import gc
import marshal
import mmap
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from diagnose.records.models import ErrorRecord
from diagnose.records.parse import Parsed
from diagnose.records.recordlist import HOT_FIELDS

FORMAT = 2
MAGIC = b"DGNR"
BLOCK = 64  # records decoded together when one of them is first read (~0.3 ms)
MMAP_MIN = 1 << 20  # smaller entries are simply read
MAX_AHEAD = 64  # blocks an iteration builds at once, at most
FIELDS = tuple(ErrorRecord.model_fields)
_HOT_INDEX = {name: i for i, name in enumerate(HOT_FIELDS)}
_FIELDS_SET = set(FIELDS)  # shared by the models built here: every field is set, none changes


def encode(key: tuple[Any, ...], parsed: Parsed) -> list[bytes]:
    """The entry for ``parsed`` (its records must be models in a list) as bytes to write."""
    rows = [record.__dict__ for record in parsed.records]
    sections = [
        marshal.dumps([[row[name] for row in rows] for name in HOT_FIELDS]),
        marshal.dumps(list(parsed.where)),
        *(marshal.dumps(rows[i : i + BLOCK]) for i in range(0, len(rows), BLOCK)),
    ]
    offsets, at = [], 0
    for section in sections:
        offsets.append(at)
        at += len(section)
    offsets.append(at)
    header = marshal.dumps(
        (FORMAT, key, parsed.not_records, list(parsed.findings), len(rows), BLOCK, offsets)
    )
    return [MAGIC, len(header).to_bytes(4, "little"), header, *sections]


class OpenedEntry:
    """An entry whose header has been read; ``key`` is what the cache checks before use."""

    def __init__(self, buffer: Any, body: int, header: tuple[Any, ...]) -> None:
        _, self.key, self._not_records, self._findings, self._count, self._block, offsets = header
        self._buffer = buffer
        self._body = body
        self._offsets: list[int] = offsets

    def section(self, number: int) -> Any:
        start, end = self._offsets[number], self._offsets[number + 1]
        return marshal.loads(memoryview(self._buffer)[self._body + start : self._body + end])

    def parsed(self) -> Parsed:
        """The cached result: findings now, the hot columns now, records on demand."""
        return Parsed(
            records=CachedRecords(self, self._count, self._block, self.section(0)),
            where=_LazySection(self, 1, self._count),
            findings=[tuple(f) for f in self._findings],
            not_records=self._not_records,
        )

    def rekeyed(self, key: tuple[Any, ...]) -> list[bytes]:
        """The same entry under a new key (e.g. no longer racy)."""
        header = marshal.dumps((FORMAT, key, self._not_records, self._findings, self._count,
                                self._block, self._offsets))
        body = bytes(memoryview(self._buffer)[self._body :])
        return [MAGIC, len(header).to_bytes(4, "little"), header, body]


def open_entry(path: Path) -> OpenedEntry | None:
    """The entry at ``path`` with its header read, or None when absent, foreign or damaged."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 8:
                return None
            if size < MMAP_MIN:
                buffer: Any = fh.read()
            else:
                buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if buffer[:4] != MAGIC:
            return None
        length = int.from_bytes(buffer[4:8], "little")
        header = marshal.loads(memoryview(buffer)[8 : 8 + length])
        if not isinstance(header, tuple) or len(header) != 7 or header[0] != FORMAT:
            return None
        offsets = header[6]
        if 8 + length + offsets[-1] != size or len(offsets) != 3 + -(-header[4] // header[5]):
            return None  # truncated, or not written by this code
        return OpenedEntry(buffer, 8 + length, header)
    except (OSError, ValueError, EOFError, TypeError, IndexError, ZeroDivisionError):
        return None


def _build(values: dict[str, Any], new: Any = ErrorRecord.__new__,
           setattr_: Any = object.__setattr__) -> ErrorRecord:
    """A model from its validated field dict, without validating it again."""
    record = new(ErrorRecord)
    setattr_(record, "__dict__", values)
    setattr_(record, "__pydantic_fields_set__", _FIELDS_SET)
    setattr_(record, "__pydantic_extra__", None)
    setattr_(record, "__pydantic_private__", None)
    return record


class CachedRecords(Sequence[ErrorRecord]):
    """One cached file's records: hot columns at once, each model built on first read."""

    __slots__ = ("_block", "_built", "_count", "_entry", "_hot")

    def __init__(self, entry: OpenedEntry, count: int, block: int, hot: list[list[Any]]) -> None:
        self._entry = entry
        self._count = count
        self._block = block
        self._hot = hot
        self._built: list[ErrorRecord | None] = [None] * count

    def __len__(self) -> int:
        return self._count

    def column(self, name: str) -> list[Any] | None:
        """The values of a hot field for every record (None for other fields)."""
        i = _HOT_INDEX.get(name)
        return None if i is None else self._hot[i]

    def _build_blocks(self, first: int, count: int = 1) -> None:
        """Build the records of blocks ``first`` .. ``first + count - 1`` not built yet."""
        block, built, entry = self._block, self._built, self._entry
        enabled = gc.isenabled()
        gc.disable()  # these objects hold no cycles; collections would make this 2x slower
        try:
            for number in range(first, min(first + count, -(-self._count // block))):
                start = number * block
                if built[start] is not None:
                    continue
                for j, values in enumerate(entry.section(2 + number)):
                    if built[start + j] is None:
                        built[start + j] = _build(values)
        finally:
            if enabled:
                gc.enable()

    def __getitem__(self, index: int) -> ErrorRecord:  # type: ignore[override]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("record index out of range")
        record = self._built[index]
        if record is None:
            self._build_blocks(index // self._block)
            record = self._built[index]
        assert record is not None
        return record

    def __iter__(self) -> Iterator[ErrorRecord]:
        """Builds ahead in chunks that double up to ``MAX_AHEAD`` blocks: iterating everything
        then pauses the GC for long stretches (measured 2x faster than block by block), while a
        loop that stops early has built at most twice what it read."""
        block, built = self._block, self._built
        number, chunk, blocks = 0, 1, -(-self._count // block)
        while number < blocks:
            self._build_blocks(number, chunk)
            yield from built[number * block : (number + chunk) * block]  # type: ignore[misc]
            number += chunk
            chunk = min(2 * chunk, MAX_AHEAD)


class _LazySection(Sequence[Any]):
    """A list stored in an entry section, decoded on first use."""

    __slots__ = ("_count", "_entry", "_number", "_values")

    def __init__(self, entry: OpenedEntry, number: int, count: int) -> None:
        self._entry, self._number, self._count = entry, number, count
        self._values: list[Any] | None = None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        if self._values is None:
            self._values = [tuple(v) for v in self._entry.section(self._number)]
        return self._values[index]
