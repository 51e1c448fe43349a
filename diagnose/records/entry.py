"""The on-disk form of one cached record file, read lazily.

Layout: a 16-byte prefix (``MAGIC``, then the header's offset and length, 8 and 4 bytes, little
endian), one or more *parts*, then the header::

    header   marshal (FORMAT, key, not_records, findings, count, block size, parts)
    part     hot | where | blocks, found through its ``(at, count, section offsets)`` in parts
      hot      marshal: one list per ``HOT_FIELDS`` field, each value for every record of the part
      where    marshal: (line, index, json path prefix) per record (for duplicate reports)
      blocks   marshal: ``BLOCK`` records each (the part's last may hold fewer), a record as its
               model's field dict

A file validated in one go is stored as one part. A big file validated by several worker
processes is stored as one part per piece of work (in file order in ``parts``, in any order in
the file): each worker appends its parts to the same new file (``O_APPEND``), and the parent
adds the header and the prefix, so no part is ever copied (joining the parts' files afterwards
cost 0.07-0.19 s for 100k records here; ``split.py``). One entry per record file either way.

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
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from diagnose.records.models import ErrorRecord
from diagnose.records.parse import Finding, Parsed
from diagnose.records.recordlist import HOT_FIELDS

FORMAT = 3
MAGIC = b"DGNR"
PREFIX = 16  # MAGIC, header offset (8 bytes), header length (4 bytes)
BLOCK = 64  # records decoded together when one of them is first read (~0.3 ms)
MMAP_MIN = 1 << 20  # smaller entries are simply read
MAX_AHEAD = 64  # blocks an iteration builds at once, at most
FIELDS = tuple(ErrorRecord.model_fields)
_HOT_INDEX = {name: i for i, name in enumerate(HOT_FIELDS)}
_FIELDS_SET = set(FIELDS)  # shared by the models built here: every field is set, none changes

# Where a part sits: (file offset of its first byte, record count, section offsets from there).
PartRef = tuple[int, int, list[int]]


def encode_part(
    records: Sequence[ErrorRecord], where: Sequence[Any]
) -> tuple[bytes, int, list[int]]:
    """One part as bytes (records must be models), its record count and its section offsets."""
    rows = [record.__dict__ for record in records]
    sections = [
        marshal.dumps([[row[name] for row in rows] for name in HOT_FIELDS]),
        marshal.dumps(list(where)),
        *(marshal.dumps(rows[i : i + BLOCK]) for i in range(0, len(rows), BLOCK)),
    ]
    offsets, at = [], 0
    for section in sections:
        offsets.append(at)
        at += len(section)
    offsets.append(at)
    return b"".join(sections), len(rows), offsets


def encode_header(
    key: tuple[Any, ...], not_records: str | None, findings: list[Finding], parts: list[PartRef]
) -> bytes:
    """The header naming every part (in file order of their records)."""
    count = sum(part[1] for part in parts)
    return marshal.dumps((FORMAT, key, not_records, list(findings), count, BLOCK, list(parts)))


def encode_prefix(header_at: int, header_length: int) -> bytes:
    return MAGIC + header_at.to_bytes(8, "little") + header_length.to_bytes(4, "little")


def encode(key: tuple[Any, ...], parsed: Parsed) -> list[bytes]:
    """The entry for ``parsed`` (its records must be models in a list) as bytes to write."""
    body, count, offsets = encode_part(parsed.records, parsed.where)
    header = encode_header(key, parsed.not_records, parsed.findings, [(PREFIX, count, offsets)])
    return [encode_prefix(PREFIX + len(body), len(header)), body, header]


class OpenedEntry:
    """An entry whose header has been read; ``key`` is what the cache checks before use."""

    def __init__(self, buffer: Any, header_at: int, header: tuple[Any, ...]) -> None:
        _, self.key, self._not_records, self._findings, self._count, self._block, parts = header
        self._buffer = buffer
        self._header_at = header_at
        self._parts: list[PartRef] = parts
        # every block of every part, in record order: its first record and its bytes
        self.block_starts: list[int] = []
        self._spans: list[tuple[int, int]] = []
        first = 0
        for at, count, offsets in parts:
            for number in range(2, len(offsets) - 1):
                self.block_starts.append(first + (number - 2) * self._block)
                self._spans.append((at + offsets[number], at + offsets[number + 1]))
            first += count
        self.block_starts.append(first)

    def _load(self, start: int, end: int) -> Any:
        return marshal.loads(memoryview(self._buffer)[start:end])

    def block(self, number: int) -> list[dict[str, Any]]:
        """The field dicts of the records of block ``number`` (counting over all parts)."""
        return self._load(*self._spans[number])

    def part_section(self, part: PartRef, number: int) -> Any:
        at, _, offsets = part
        return self._load(at + offsets[number], at + offsets[number + 1])

    def parsed(self) -> Parsed:
        """The cached result: findings now, the hot columns now, records on demand."""
        hot = [self.part_section(part, 0) for part in self._parts]
        if len(hot) == 1:
            columns = hot[0]
        else:
            columns = [[] for _ in HOT_FIELDS]
            for part_columns in hot:
                for column, values in zip(columns, part_columns, strict=True):
                    column.extend(values)
        return Parsed(
            records=CachedRecords(self, self._count, columns),
            where=_LazyWhere(self, self._count),
            findings=[tuple(f) for f in self._findings],
            not_records=self._not_records,
        )

    def where(self) -> list[tuple[Any, ...]]:
        return [tuple(w) for part in self._parts for w in self.part_section(part, 1)]

    def rekeyed(self, key: tuple[Any, ...]) -> list[bytes]:
        """The same entry under a new key (e.g. no longer racy); parts stay where they are."""
        header = marshal.dumps(
            (FORMAT, key, self._not_records, self._findings, self._count, self._block, self._parts)
        )
        body = bytes(memoryview(self._buffer)[PREFIX : self._header_at])
        return [encode_prefix(self._header_at, len(header)), body, header]


def open_entry(path: Path) -> OpenedEntry | None:
    """The entry at ``path`` with its header read, or None when absent, foreign or damaged."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < PREFIX:
                return None
            if size < MMAP_MIN:
                buffer: Any = fh.read()
            else:
                buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        return _checked(buffer, size)
    except (OSError, ValueError, EOFError, TypeError, IndexError, ZeroDivisionError):
        return None


def _checked(buffer: Any, size: int) -> OpenedEntry | None:
    """The entry in ``buffer`` if its layout is whole and consistent (else truncated or foreign)."""
    if buffer[:4] != MAGIC:
        return None
    header_at = int.from_bytes(buffer[4:12], "little")
    length = int.from_bytes(buffer[12:16], "little")
    if header_at < PREFIX or header_at + length != size:
        return None
    header = marshal.loads(memoryview(buffer)[header_at:size])
    if not isinstance(header, tuple) or len(header) != 7 or header[0] != FORMAT:
        return None
    count, block, parts = header[4], header[5], header[6]
    if block < 1 or sum(part[1] for part in parts) != count:
        return None
    for at, part_count, offsets in parts:
        if (
            len(offsets) != 3 + -(-part_count // block)
            or at < PREFIX
            or at + offsets[-1] > header_at
            or sorted(offsets) != offsets
        ):
            return None
    return OpenedEntry(buffer, header_at, header)


def _build(
    values: dict[str, Any], new: Any = ErrorRecord.__new__, setattr_: Any = object.__setattr__
) -> ErrorRecord:
    """A model from its validated field dict, without validating it again."""
    record = new(ErrorRecord)
    setattr_(record, "__dict__", values)
    setattr_(record, "__pydantic_fields_set__", _FIELDS_SET)
    setattr_(record, "__pydantic_extra__", None)
    setattr_(record, "__pydantic_private__", None)
    return record


class CachedRecords(Sequence[ErrorRecord]):
    """One cached file's records: hot columns at once, each model built on first read."""

    __slots__ = ("_built", "_count", "_entry", "_hot", "_starts")

    def __init__(self, entry: OpenedEntry, count: int, hot: list[list[Any]]) -> None:
        self._entry = entry
        self._count = count
        self._hot = hot
        self._starts = entry.block_starts  # first record of each block, then the count
        self._built: list[ErrorRecord | None] = [None] * count

    def __len__(self) -> int:
        return self._count

    def column(self, name: str) -> list[Any] | None:
        """The values of a hot field for every record (None for other fields)."""
        i = _HOT_INDEX.get(name)
        return None if i is None else self._hot[i]

    def _build_blocks(self, first: int, count: int = 1) -> None:
        """Build the records of blocks ``first`` .. ``first + count - 1`` not built yet."""
        starts, built, entry = self._starts, self._built, self._entry
        enabled = gc.isenabled()
        gc.disable()  # these objects hold no cycles; collections would make this 2x slower
        try:
            for number in range(first, min(first + count, len(starts) - 1)):
                start = starts[number]
                if built[start] is not None:
                    continue
                for j, values in enumerate(entry.block(number)):
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
            self._build_blocks(bisect_right(self._starts, index) - 1)
            record = self._built[index]
        assert record is not None
        return record

    def __iter__(self) -> Iterator[ErrorRecord]:
        """Builds ahead in chunks that double up to ``MAX_AHEAD`` blocks: iterating everything
        then pauses the GC for long stretches (measured 2x faster than block by block), while a
        loop that stops early has built at most twice what it read."""
        starts, built = self._starts, self._built
        number, chunk, blocks = 0, 1, len(starts) - 1
        while number < blocks:
            self._build_blocks(number, chunk)
            yield from built[starts[number] : starts[min(number + chunk, blocks)]]  # type: ignore[misc]
            number += chunk
            chunk = min(2 * chunk, MAX_AHEAD)


class _LazyWhere(Sequence[Any]):
    """Where each record sits (only duplicate reports need it): decoded on first use."""

    __slots__ = ("_count", "_entry", "_values")

    def __init__(self, entry: OpenedEntry, count: int) -> None:
        self._entry, self._count = entry, count
        self._values: list[Any] | None = None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        if self._values is None:
            self._values = self._entry.where()
        return self._values[index]
