"""The records ``diagnose match`` ranks, kept on disk as one index that a paste loads at once.

A match run is a whole process, and a paste should be answered about as fast as ``grep``
would: validating the dataset (pydantic models, the JSON Schema rules), even from the
per-file records cache, and reading each pattern's required literal cost several times what
the match itself does. So the CLI keeps, per set of inputs (the shipped dataset, plus the
``--dataset`` paths), one file with what matching and showing a match need and nothing else:
each record's ``FIELDS`` as a plain dict, the load's problems as the lines to print, and each
pattern's required literals (``literals.required_literals``). A warm run reads that file and
imports neither pydantic nor the loader.

Validity: the file holds the signature of every input (each file's path, size, mtime, ctime,
inode, the files a folder holds) and of the code that decides what a load gives (the records
package, the schema, this module); any difference rebuilds it from ``load_records``. An index
built within ``RACY_NS`` of an input's change is not stored: a write in the same clock tick
could leave the same stamps (see ``records/cache.py``). The file starts with ``MAGIC`` and a
CRC-32 of the rest, checked before anything is decoded, and the decoded value's shape is
checked too: a corrupt, truncated or foreign file is rebuilt over, never trusted or fatal.
It lives in the user's cache folder (``paths.user_cache_dir``, ``DIAGNOSE_CACHE_DIR=off``
turns it off), written to a temporary file and renamed; at most ``KEEP`` index files stay.
"""

from __future__ import annotations

import marshal
import os
import time
import zlib
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose.paths import dataset_schema_path, records_dir, user_cache_dir

FIELDS = ("id", "slug", "errorMessage", "messagePattern", "errorClass", "solutions", "exampleFix")
FORMAT = 1
MAGIC = b"DGMATCH1"
RACY_NS = 2_000_000_000
KEEP = 16  # index files kept (one per distinct set of --dataset paths)
_CODE = Path(__file__).resolve().parent.parent / "records"


@dataclass(frozen=True, slots=True)
class MatchIndex:
    """What a match run needs: records as field dicts, load problems, pattern literals."""

    records: list[dict[str, Any]]
    problems: list[str]
    literals: list[tuple[str, ...] | None]


def load_index(extra: Sequence[str | Path] = ()) -> MatchIndex:
    """The shipped records plus ``extra`` files (a user's record wins over ours by id)."""
    sources = [records_dir(), *(Path(p) for p in extra)]
    started = time.time_ns()
    key, newest = _signature(sources)
    where = _index_path(sources)
    if where is not None:
        cached = _read(where, key)
        if cached is not None:
            return cached
    index = build(extra)
    if where is not None and newest < started - RACY_NS:
        _write(where, key, index)
    return index


def build(extra: Sequence[str | Path] = ()) -> MatchIndex:
    """The index made from the loader (validation, the per-file records cache)."""
    from diagnose.matcher import field_of
    from diagnose.matching.literals import required_literals
    from diagnose.records import load_records

    builtin = load_records()
    records = {r.id: r for r in builtin.records}
    problems = [str(p) for p in builtin.problems]
    if extra:
        added = load_records(*extra)
        problems += [str(p) for p in added.problems]
        records.update({r.id: r for r in added.records})
    rows = [{name: field_of(r, name) for name in FIELDS} for r in records.values()]
    literals = [
        required_literals(row["messagePattern"]) if row["messagePattern"] else None for row in rows
    ]
    return MatchIndex(rows, problems, literals)


def _signature(sources: list[Path]) -> tuple[tuple[Any, ...], int]:
    """Every input's and the code's stamps, and the newest change among the inputs (ns)."""
    stamps: list[tuple[Any, ...]] = [(FORMAT,)]
    newest = 0
    for source in sources:
        for path, st in _files(source):
            stamps.append((path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    for path, st in _files(_CODE, suffix=".py"):
        stamps.append((path, st.st_size, st.st_mtime_ns))
    for path in (dataset_schema_path(), Path(__file__)):
        with suppress(OSError, ValueError):
            st = path.stat()
            stamps.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(stamps), newest


def _files(source: Path, suffix: str = "") -> list[tuple[str, os.stat_result]]:
    """``source`` itself, or every file under it (sorted, links followed); missing: nothing."""
    try:
        st = source.stat()
    except (OSError, ValueError):
        return [(str(source), _MISSING)]
    if not os.path.isdir(source):
        return [(str(source), st)]
    found: list[tuple[str, os.stat_result]] = []
    for base, dirs, names in os.walk(source):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(suffix):
                path = os.path.join(base, name)
                with suppress(OSError, ValueError):
                    found.append((path, os.stat(path)))
    return found


_MISSING = os.stat_result((0,) * 10)


def _index_path(sources: list[Path]) -> Path | None:
    root = user_cache_dir()
    if root is None:
        return None
    names = "\0".join(os.path.abspath(p) for p in sources).encode("utf-8", "surrogateescape")
    return root / "match" / f"{zlib.crc32(names):08x}-{len(sources)}.index"


def _read(where: Path, key: tuple[Any, ...]) -> MatchIndex | None:
    try:
        data = where.read_bytes()
    except (OSError, ValueError):
        return None
    head = len(MAGIC) + 4
    if data[: len(MAGIC)] != MAGIC or len(data) < head:
        return None
    payload = memoryview(data)[head:]
    if zlib.crc32(payload) != int.from_bytes(data[len(MAGIC) : head], "little"):
        return None
    try:
        value = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == key):
        return None
    _key, records, problems, literals = value
    shapes = (isinstance(records, list), isinstance(problems, list), isinstance(literals, list))
    if not all(shapes) or len(records) != len(literals):
        return None
    if records and not (isinstance(records[0], dict) and set(records[0]) == set(FIELDS)):
        return None
    return MatchIndex(records, problems, literals)


def _write(where: Path, key: tuple[Any, ...], index: MatchIndex) -> None:
    """A new file renamed over the old one; a cache that cannot be written is no error."""
    payload = marshal.dumps((key, index.records, index.problems, index.literals))
    tmp = where.with_name(f"{where.name}.{os.getpid()}.tmp")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(MAGIC + zlib.crc32(payload).to_bytes(4, "little"))
                fh.write(payload)
            os.replace(tmp, where)
        except BaseException:
            os.unlink(tmp)
            raise
        _bound(where.parent)
    except (OSError, ValueError):
        pass


def _bound(folder: Path) -> None:
    """Keep the ``KEEP`` most recently written index files; older ones (and dead temps) go."""
    entries = []
    for entry in os.scandir(folder):
        with suppress(OSError, ValueError):
            entries.append((entry.stat().st_mtime_ns, entry.path))
    entries.sort(reverse=True)
    for _mtime, path in entries[KEEP:]:
        with suppress(OSError, ValueError):
            os.unlink(path)
