"""Error records: models, the loader/validator, and its problems.

``load_records(*paths) -> LoadResult`` reads record files and folders (the shipped dataset when
no path is given). ``ErrorRecord`` attributes are the upstream JSON keys (``rec.messagePattern``).
``LoadResult.records`` is a ``RecordList``: records served by the cache become models when first
read, and ``records.column(name)`` gives a field of every record (cheaply for ``HOT_FIELDS``).
This package imports neither torch nor textual.
"""

from __future__ import annotations

from diagnose.records.loader import load_records
from diagnose.records.models import ErrorRecord, RecordWrapper
from diagnose.records.problems import LoadResult, Problem, Skipped
from diagnose.records.recordlist import HOT_FIELDS, RecordList

__all__ = [
    "HOT_FIELDS",
    "ErrorRecord",
    "LoadResult",
    "Problem",
    "RecordList",
    "RecordWrapper",
    "Skipped",
    "load_records",
]
