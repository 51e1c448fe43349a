"""What the loader reports: problems (with their exact location) and files it skipped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from diagnose.records.models import ErrorRecord


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a dataset file, located as precisely as the file allows.

    ``line`` (1-based) locates JSON Lines entries and malformed JSON, ``column`` malformed JSON,
    ``index`` (0-based) an item of a JSON array; ``json_path`` names the field inside the item.
    """

    file: str
    reason: str
    line: int | None = None
    column: int | None = None
    index: int | None = None
    json_path: str | None = None

    @property
    def location(self) -> str:
        loc = self.file
        if self.line is not None:
            loc += f":{self.line}"
            if self.column is not None:
                loc += f":{self.column}"
        if self.index is not None:
            loc += f"[{self.index}]"
        return loc

    def __str__(self) -> str:
        where = f"{self.location} {self.json_path}" if self.json_path else self.location
        return f"{where}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "index": self.index,
            "path": self.json_path,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Skipped:
    """A file in a folder that is clearly not a record file (a schema, notes, ...)."""

    file: str
    reason: str

    def __str__(self) -> str:
        return f"skipped {self.file}: {self.reason}"


@dataclass
class LoadResult:
    """Everything loaded from some paths: the good records in file order, and what was wrong.

    ``records`` is a read-only sequence (a ``RecordList`` after a load) whose records from the
    cache become models only when read; ``records.column("id")`` and the other hot fields of
    every record come without building any.
    """

    records: Sequence[ErrorRecord] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "records": len(self.records),
            "files": len(self.files),
            "problem_files": len({p.file for p in self.problems}),
            "problems": [p.to_dict() for p in self.problems],
            "skipped": [{"file": s.file, "reason": s.reason} for s in self.skipped],
        }
