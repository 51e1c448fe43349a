"""Error records: models, the loader/validator, and its problems.

``load_records(*paths) -> LoadResult`` reads record files and folders (the shipped dataset when
no path is given). ``ErrorRecord`` attributes are the upstream JSON keys (``rec.messagePattern``).
This package imports neither torch nor textual.
"""

from __future__ import annotations

from diagnose.records.loader import load_records
from diagnose.records.models import ErrorRecord, RecordWrapper
from diagnose.records.problems import LoadResult, Problem, Skipped

__all__ = ["ErrorRecord", "LoadResult", "Problem", "RecordWrapper", "Skipped", "load_records"]
