"""``load_records(*paths)``: read dataset files and folders, validate, and locate every problem.

Folders are read recursively, in sorted order. In a folder, ``.json``, ``.jsonl`` and
``.ndjson`` files are record files; ``.txt`` files (the upstream dataset's own extension) are
read when they start with ``{`` or ``[``; hidden files and folders are ignored; anything else,
and JSON files that are JSON Schemas (``schema.json``), is skipped and listed in
``LoadResult.skipped``. A file named explicitly is always read as a record file.

Cold inputs of many megabytes are validated by worker processes (``parallel.py``): the lines of
one big JSON Lines file (``split.py``) or the files of a folder that the cache does not hold
yet. They hand their results over as cache entries, so this process reads them as a warm load
would, and the result is the serial one, record for record and problem for problem.
"""

from __future__ import annotations

import gc
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from diagnose.paths import records_dir
from diagnose.records import cache, parallel, split
from diagnose.records.parse import JSON_LINES_SUFFIXES, Parsed, parse_bytes
from diagnose.records.problems import LoadResult, Problem, Skipped
from diagnose.records.recordlist import RecordList
from diagnose.userfiles import RECORDS_CAP, UserFileError, kind_of, read_bytes, size_words

RECORD_SUFFIXES = (".json", *JSON_LINES_SUFFIXES)
MAYBE_SUFFIXES = (".txt",)


def _display(path: Path) -> str:
    """The path as the user would write it: relative to the working folder when inside it."""
    if not path.is_absolute():
        return str(path)
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _walk(folder: Path, result: LoadResult) -> list[Path]:
    found: list[Path] = []
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(base) / name
            suffix = path.suffix.lower()
            irregular = _not_regular(path)
            if irregular:  # a FIFO would block the reader, a device would never end
                result.skipped.append(Skipped(_display(path), irregular))
            elif suffix in RECORD_SUFFIXES or (
                suffix in MAYBE_SUFFIXES and _starts_like_json(path)
            ):
                found.append(path)
            else:
                result.skipped.append(Skipped(_display(path), "not a record file (.json, .jsonl)"))
    return found


def _not_regular(path: Path) -> str | None:
    """Why ``path`` (followed if a link) cannot be a records file, or None for a regular file."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # let the reader report it
    return None if stat.S_ISREG(mode) else f"not a regular file ({kind_of(mode)})"


def _starts_like_json(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(256).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return True  # let the reader report it
    return head[:1] in (b"{", b"[")


def _read(path: Path, display: str, parse: bool = True) -> tuple[Parsed | None, Problem | None]:
    """The file's records and findings, from the cache when it has them; else read and parsed
    (big files by worker processes, ``split.py``) and stored. ``parse=False``: the cache only
    ((None, None) when it does not have them)."""
    try:
        st = path.stat()
    except OSError as exc:
        return None, Problem(display, f"cannot read: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return None, Problem(display, f"not a regular file ({kind_of(st.st_mode)})")
    if st.st_size > RECORDS_CAP:
        return None, Problem(
            display, f"larger than the {size_words(RECORDS_CAP)} a records file may have"
        )
    hit = cache.load(path, st)
    if hit is not None or not parse:
        return hit, None
    started = time.time_ns()
    try:
        data = read_bytes(path, RECORDS_CAP)  # regular, capped: the file may have changed
        after = path.stat()
    except UserFileError as exc:
        return None, Problem(display, str(exc).removeprefix(f"{path}: "))
    except OSError as exc:
        return None, Problem(display, f"cannot read: {exc.strerror or exc}")
    unchanged = cache.signature(after) == cache.signature(st)  # not changed while we read it
    suffix = path.suffix.lower()
    parsed = split.parse_split(path, data, suffix, after, started, publish=unchanged)
    if parsed is None:
        parsed = parse_bytes(data, suffix)
        if unchanged:
            cache.store(path, after, data, started, parsed)
    return parsed, None


def _split_by_itself(path: Path) -> bool:
    """Whether a file is big JSON Lines, which ``_read`` splits among workers by itself."""
    try:
        size = path.stat().st_size
    except OSError:
        return False
    return path.suffix.lower() in JSON_LINES_SUFFIXES and parallel.workers_for(size) > 1


class _Loading:
    """One load in progress: the result, and each file's records and where they sit."""

    def __init__(self) -> None:
        self.result = LoadResult()
        self.segments: list[Any] = []  # per file: its records (a list, or lazy from the cache)
        self.where: list[tuple[str, Any]] = []  # per file: (display, where of each record)

    def add_file(
        self,
        path: Path,
        display: str,
        explicit: bool,
        read: tuple[Parsed | None, Problem | None] | None = None,
    ) -> None:
        parsed, problem = read if read is not None else _read(path, display)
        result = self.result
        if problem is not None:
            result.files.append(display)
            result.problems.append(problem)
            return
        assert parsed is not None
        if parsed.not_records is not None:
            if explicit:
                result.problems.append(Problem(display, parsed.not_records))
            else:
                result.skipped.append(Skipped(display, parsed.not_records))
            return
        result.files.append(display)
        for line, column, index, path_, reason in parsed.findings:
            result.problems.append(Problem(display, reason, line, column, index, path_))
        self.segments.append(parsed.records)
        self.where.append((display, parsed.where))

    def add_folder(self, folder: Path, display: str) -> None:
        result = self.result
        records, problems, skipped = self.count(), len(result.problems), len(result.skipped)
        paths = _walk(folder, result)
        displays = [_display(path) for path in paths]
        # what the cache holds now; the rest is validated by worker processes when that pays
        cached = [
            _read(path, shown, parse=False) for path, shown in zip(paths, displays, strict=True)
        ]
        cold = [
            path
            for path, read in zip(paths, cached, strict=True)
            if read == (None, None) and not _split_by_itself(path)
        ]
        with parallel.prefetched(cold, lambda path: _read(path, "")):
            for path, shown, read in zip(paths, displays, cached, strict=True):
                self.add_file(
                    path, shown, explicit=False, read=None if read == (None, None) else read
                )
        if self.count() == records and len(result.problems) == problems:
            note = len(result.skipped) - skipped
            extra = f" (skipped {note} file{'s' if note != 1 else ''})" if note else ""
            result.problems.append(Problem(display, f"folder holds no records{extra}"))

    def count(self) -> int:
        return sum(len(s) for s in self.segments)

    def finish(self) -> None:
        """The records of every file; of each id only the first, every later one reported with
        both locations (the check needs only the ids, so cached records stay unbuilt)."""
        records = RecordList(self.segments)
        ids = records.column("id")
        if len(set(ids)) == len(ids):
            self.result.records = records
            return
        first: dict[str, int] = {}
        keep = []
        for i, id_ in enumerate(ids):
            j = first.setdefault(id_, i)
            if j == i:
                keep.append(i)
                continue
            file, (line, index, prefix) = self._where(records, i)
            ffile, (fline, findex, _) = self._where(records, j)
            earlier = Problem(ffile, "", fline, None, findex).location
            self.result.problems.append(
                Problem(
                    file,
                    f"duplicate id {id_!r} (first at {earlier})",
                    line,
                    None,
                    index,
                    f"{prefix}.id",
                )
            )
        self.result.records = records.keep_only(keep)

    def _where(self, records: RecordList, i: int) -> tuple[str, tuple[Any, ...]]:
        k, local = records.locate(i)
        display, where = self.where[k]
        return display, tuple(where[local])


def load_records(*paths: str | os.PathLike[str]) -> LoadResult:
    """Load and validate records from files and folders (the shipped dataset when none given).

    Never raises for bad input: every problem is in ``result.problems`` with its location, and
    every valid record, even in a file with bad ones, is in ``result.records`` (file order).
    A record whose id was already loaded is reported and left out.
    """
    targets = [Path(p) for p in paths] if paths else [records_dir()]
    with _no_gc():
        return _load(targets)


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC: loading creates millions of acyclic objects, and collections
    triggered by every 700 allocations made loading 100k records 3-4x slower (measured).

    On resuming, the objects the load made (the records) would all still be young, so the next
    allocation would start a collection that walks every one of them (0.2-0.4 s for 100k
    records), and two more would walk them again as they age. Freezing and unfreezing moves
    them straight to the oldest generation, in constant time, where they are collected like
    any long-lived data. Skipped when the program froze objects itself (unfreezing would undo
    that, e.g. a server that freezes before forking).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _load(targets: list[Path]) -> LoadResult:
    loading = _Loading()
    for target in targets:
        display = _display(target)
        if target.is_dir():
            loading.add_folder(target, display)
        elif target.exists() or target.is_symlink():
            loading.add_file(target, display, explicit=True)
        else:
            loading.result.problems.append(Problem(display, "no such file or folder"))
    loading.finish()
    return loading.result
