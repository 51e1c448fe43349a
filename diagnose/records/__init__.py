"""Error records: models, the loader/validator, and its problems.

``load_records(*paths) -> LoadResult`` reads record files and folders (the shipped dataset when
no path is given). ``ErrorRecord`` attributes are the upstream JSON keys (``rec.messagePattern``).
``LoadResult.records`` is a ``RecordList``: records served by the cache become models when first
read, and ``records.column(name)`` gives a field of every record (cheaply for ``HOT_FIELDS``).
This package imports neither torch nor textual, and its names are imported when first used:
a module of the package (``records.patterns``) can be used without loading pydantic.
"""

from __future__ import annotations

import importlib
from typing import Any

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

_LAZY = {
    "load_records": "diagnose.records.loader",
    "ErrorRecord": "diagnose.records.models",
    "RecordWrapper": "diagnose.records.models",
    "LoadResult": "diagnose.records.problems",
    "Problem": "diagnose.records.problems",
    "Skipped": "diagnose.records.problems",
    "HOT_FIELDS": "diagnose.records.recordlist",
    "RecordList": "diagnose.records.recordlist",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'diagnose.records' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
