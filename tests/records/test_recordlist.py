"""RecordList: many files' records as one sequence, in order, with duplicates left out."""

from __future__ import annotations

import pytest

from diagnose.records import ErrorRecord
from diagnose.records.recordlist import RecordList
from tests.records.factory import record


def models(*ids: int) -> list[ErrorRecord]:
    return [ErrorRecord.model_validate(record(i)) for i in ids]


def test_segments_read_as_one_sequence_in_order():
    a, b = models(1, 2), models(3)
    records = RecordList([a, [], b])
    assert len(records) == 3
    assert [r.id for r in records] == [f"{i:016x}" for i in (1, 2, 3)]
    assert records[2] is b[0] and records[-3] is a[0]
    assert records[1:] == [a[1], b[0]]
    assert records == [*a, *b] and [*a, *b] == records
    assert records != [*a]
    with pytest.raises(IndexError):
        records[3]


def test_keep_only_restricts_and_locates():
    a, b = models(1, 2), models(3, 4)
    records = RecordList([a, b]).keep_only([0, 3])
    assert list(records) == [a[0], b[1]]
    assert records.column("slug") == [a[0].slug, b[1].slug]
    assert records.locate(1) == (1, 1)


def test_an_empty_list():
    records = RecordList()
    assert len(records) == 0 and list(records) == [] and records == []
    assert records.column("id") == []
