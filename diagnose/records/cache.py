"""A per-file cache of validated records that can never serve stale data.

Where: ``$DIAGNOSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/diagnose``, else ``~/.cache/diagnose``
(subfolder ``records/``). ``DIAGNOSE_CACHE_DIR=off`` turns it off.

Validity: an entry remembers the file's size, inode, mtime and ctime. ctime cannot be set by
``os.utime``, so rewriting a file and restoring its mtime still changes it. The one gap is
timestamp granularity: two writes within one clock tick can leave identical stamps (git's
"racy clean" problem). An entry whose file was changed less than ``RACY_NS`` before it was read
is therefore marked racy and stores a BLAKE2 hash of the content; using a racy entry means
reading and hashing the file, and a match made after the racy window has passed upgrades it.

Format: ``marshal`` of plain values (each record's field dict); rebuilding models from it skips
validation (the content is what was validated) and is several times faster than pickle.
The key includes a fingerprint of the schema and of the validation code, so a change to either
invalidates every entry.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

from diagnose.paths import dataset_schema_path
from diagnose.records.models import ErrorRecord
from diagnose.records.parse import Parsed

FORMAT = 1
RACY_NS = 2_000_000_000
_FIELDS = tuple(ErrorRecord.model_fields)


def cache_dir() -> Path | None:
    """The records cache folder, or None when caching is off."""
    configured = os.environ.get("DIAGNOSE_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in ("", "0", "off", "none"):
            return None
        return Path(configured) / "records"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "diagnose" / "records"


@cache
def fingerprint() -> str:
    """Changes whenever the schema or the code that validates records changes."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(FORMAT).encode())
    here = Path(__file__).resolve().parent
    for path in [dataset_schema_path(), *sorted(here.glob("*.py"))]:
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"missing")
    return digest.hexdigest()


def signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def content_hash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=20).digest()


def _entry_path(folder: Path, path: Path) -> Path:
    name = hashlib.blake2b(os.fsencode(path), digest_size=16).hexdigest()
    return folder / f"{name}.marshal"


def is_racy(st: os.stat_result, read_started_ns: int) -> bool:
    """True when a later write could leave the same stamps (it falls in the same tick)."""
    return max(st.st_mtime_ns, st.st_ctime_ns) >= read_started_ns - RACY_NS


def _build(rows: list[dict[str, Any]]) -> list[ErrorRecord]:
    """Rebuild already-validated records without validating them again."""
    new = ErrorRecord.__new__
    setattr_ = object.__setattr__
    fields_set = set(_FIELDS)  # shared: the models are frozen
    out = []
    for row in rows:
        record = new(ErrorRecord)
        setattr_(record, "__dict__", row)
        setattr_(record, "__pydantic_fields_set__", fields_set)
        setattr_(record, "__pydantic_extra__", None)
        setattr_(record, "__pydantic_private__", None)
        out.append(record)
    return out


def load(path: Path, st: os.stat_result) -> Parsed | None:
    """The cached result for ``path`` if it is certainly still that file's content."""
    folder = cache_dir()
    if folder is None:
        return None
    entry = _entry_path(folder, path)
    try:
        raw = entry.read_bytes()
        fmt, fp, sig, racy, digest, payload = marshal.loads(raw)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if fmt != FORMAT or fp != fingerprint() or tuple(sig) != signature(st):
        return None
    if racy:
        started = time.time_ns()
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if content_hash(data) != digest:
            return None
        if not is_racy(st, started):  # the tick has passed: later writes will show in stamps
            _write(entry, (FORMAT, fp, sig, False, digest, payload))
    not_records, findings, where, rows = payload
    return Parsed(
        records=_build(rows),
        where=[tuple(w) for w in where],
        findings=[tuple(f) for f in findings],
        not_records=not_records,
    )


def store(path: Path, st: os.stat_result, data: bytes, read_started_ns: int, parsed: Parsed) -> None:
    """Remember ``parsed`` for ``path`` (best effort: a read-only cache is not an error)."""
    folder = cache_dir()
    if folder is None:
        return
    racy = is_racy(st, read_started_ns)
    rows = [record.__dict__ for record in parsed.records]
    payload = (parsed.not_records, parsed.findings, parsed.where, rows)
    digest = content_hash(data) if racy else b""
    _write(_entry_path(folder, path), (FORMAT, fingerprint(), signature(st), racy, digest, payload))


def _write(entry: Path, value: Any) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                marshal.dump(value, fh)
            os.replace(tmp, entry)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass
