"""``LoadResult.records``: the loaded records as one read-only sequence, built lazily.

A load concatenates one *segment* per file: a plain list of validated models (a file that was
just parsed) or a cached file's records, which become models only when first read (see
``cached.py``). So a warm load of 100k records costs what it takes to check the cache, and a
caller pays for each record it actually looks at. ``column(name)`` gives one field of every
record without building any when the segments keep that field apart (the cache keeps
``HOT_FIELDS``, the ones an index over all records needs).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, overload

from diagnose.records.models import ErrorRecord

# The fields a caller typically reads from *every* record (to index them); cached files keep
# them as columns so ``column()`` needs no model.
HOT_FIELDS = ("id", "slug", "messagePattern", "errorMessage", "errorClass")


def segment_column(segment: Sequence[ErrorRecord], name: str) -> list[Any]:
    """One field of every record of a segment (cheaply when the segment keeps it apart)."""
    column = getattr(segment, "column", None)
    if column is not None:
        values = column(name)
        if values is not None:
            return values
    return [getattr(record, name) for record in segment]


class RecordList(Sequence[ErrorRecord]):
    """Records of several files, in order, optionally only those at ``keep`` (global indexes).

    Read-only: it compares equal to any sequence with the same records (``== [...]`` works).
    """

    __slots__ = ("_keep", "_segments", "_starts", "_total")

    def __init__(
        self, segments: Sequence[Sequence[ErrorRecord]] = (), keep: list[int] | None = None
    ) -> None:
        self._segments = list(segments)  # empty ones too: segment numbers match the caller's
        self._starts: list[int] = []
        total = 0
        for segment in self._segments:
            self._starts.append(total)
            total += len(segment)
        self._total = total
        self._keep = keep

    def __len__(self) -> int:
        return self._total if self._keep is None else len(self._keep)

    def _at(self, index: int) -> ErrorRecord:
        """The record at a global index (before ``keep``)."""
        k = bisect_right(self._starts, index) - 1
        return self._segments[k][index - self._starts[k]]

    def locate(self, position: int) -> tuple[int, int]:
        """``(segment number, index in it)`` of the record at ``position``."""
        index = position if self._keep is None else self._keep[position]
        k = bisect_right(self._starts, index) - 1
        return k, index - self._starts[k]

    @overload
    def __getitem__(self, position: int) -> ErrorRecord: ...
    @overload
    def __getitem__(self, position: slice) -> list[ErrorRecord]: ...

    def __getitem__(self, position: int | slice) -> ErrorRecord | list[ErrorRecord]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        size = len(self)
        if position < 0:
            position += size
        if not 0 <= position < size:
            raise IndexError("record index out of range")
        return self._at(position if self._keep is None else self._keep[position])

    def __iter__(self) -> Iterator[ErrorRecord]:
        if self._keep is None:
            return chain.from_iterable(self._segments)
        return (self._at(i) for i in self._keep)

    def column(self, name: str) -> list[Any]:
        """``[record.<name> for record in self]``, without building records where possible."""
        values: list[Any] = []
        for segment in self._segments:
            values.extend(segment_column(segment, name))
        return values if self._keep is None else [values[i] for i in self._keep]

    def keep_only(self, keep: list[int]) -> RecordList:
        """The same records restricted to the global indexes ``keep`` (in that order)."""
        assert self._keep is None, "keep_only applies to an unrestricted list"
        return RecordList(self._segments, keep)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<RecordList of {len(self)} records from {len(self._segments)} files>"
