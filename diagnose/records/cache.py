"""A per-file cache of validated records that can never serve stale data.

Where: ``$DIAGNOSE_CACHE_DIR``, else ``$XDG_CACHE_HOME/diagnose``, else ``~/.cache/diagnose``
(subfolder ``records/``). ``DIAGNOSE_CACHE_DIR=off`` turns it off.

Validity: an entry remembers the file's size, inode, device, mtime and ctime. ctime cannot be
set by ``os.utime``, so rewriting a file and restoring its mtime still changes it. The one gap
is timestamp granularity: two writes within one clock tick can leave identical stamps (git's
"racy clean" problem). An entry whose file was changed less than ``RACY_NS`` before it was read
is therefore marked racy and stores a SHA-256 hash of the content (SHA-NI makes it 2x faster than BLAKE2 here); using a racy entry means
reading and hashing the file, and a match made after the racy window has passed upgrades it.
The key also includes a fingerprint of the schema and of the validation code, so a change to
either invalidates every entry. Entries are written to a temporary file and renamed into place,
never modified, so an entry that was checked stays what was checked while it is read.

Size: the folder keeps at most ``DIAGNOSE_CACHE_MAX_ENTRIES`` entries (default 2048) and
``DIAGNOSE_CACHE_MAX_MB`` megabytes (default 1024); past either, the least recently used
entries go (an entry's mtime is its last use, refreshed at most hourly on a hit), and
temporary files a killed writer left behind go after an hour. A process scans the folder at
its first store and keeps count after that, so a store costs no scan until the bound is hit.

A load that validates big inputs in worker processes (``parallel.py``, ``split.py``) has them
write ordinary entries, under the same keys and the same rules, and then reads those entries as
a warm load would. With the cache off (or not writable) it uses a private temporary folder
instead, for that load only (``workers_store``).

The format (see ``entry.py``) keeps what a load needs at once (the problems, the ids and the
other ``HOT_FIELDS``) apart from the bulk of the records, which is decoded in blocks only when
a record is first read: a warm load does no work per record.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

from diagnose.paths import dataset_schema_path, user_cache_dir
from diagnose.records import entry
from diagnose.records.parse import Parsed

RACY_NS = 2_000_000_000
MAX_ENTRIES = 2048
MAX_MB = 1024.0
TOUCH_S = 3600  # a hit refreshes an entry's mtime (its last use) when older than this
STALE_TMP_S = 3600  # a temporary file this old was left by a writer that died
_serial = itertools.count()  # temporary file names: unique per process, thread and write
_private: Path | None = None  # the folder in use instead of the cache, while a load needs one


def cache_dir() -> Path | None:
    """The records cache folder, or None when caching is off."""
    if _private is not None:
        return _private
    root = user_cache_dir()
    return None if root is None else root / "records"


@cache
def fingerprint() -> str:
    """Changes whenever the schema, the code that validates records or the format changes."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(str(entry.FORMAT).encode())
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
    return hashlib.sha256(data).digest()


def _entry_path(folder: Path, path: Path) -> Path:
    name = hashlib.blake2b(os.fsencode(path), digest_size=16).hexdigest()
    return folder / f"{name}.marshal"


def is_racy(st: os.stat_result, read_started_ns: int) -> bool:
    """True when a later write could leave the same stamps (it falls in the same tick)."""
    return max(st.st_mtime_ns, st.st_ctime_ns) >= read_started_ns - RACY_NS


def load(path: Path, st: os.stat_result) -> Parsed | None:
    """The cached result for ``path`` if it is certainly still that file's content."""
    folder = cache_dir()
    if folder is None:
        return None
    where = _entry_path(folder, path)
    opened = entry.open_entry(where)
    if opened is None:
        return None
    fp, sig, racy, digest = opened.key
    if fp != fingerprint() or tuple(sig) != signature(st):
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
            _write(where, opened.rekeyed((fp, sig, False, b"")))
    _touch(where)
    return opened.parsed()


def _touch(where: Path) -> None:
    """Mark the entry used now (for pruning), at most once per TOUCH_S."""
    with suppress(OSError):
        if time.time() - os.stat(where).st_mtime > TOUCH_S:
            os.utime(where)


def key_for(st: os.stat_result, data: bytes, read_started_ns: int) -> tuple[Any, ...]:
    """The key an entry for ``data`` (read from a file with stamps ``st``) is stored under."""
    racy = is_racy(st, read_started_ns)
    return (fingerprint(), signature(st), racy, content_hash(data) if racy else b"")


def store(
    path: Path, st: os.stat_result, data: bytes, read_started_ns: int, parsed: Parsed
) -> None:
    """Remember ``parsed`` for ``path`` (best effort: a read-only cache is not an error)."""
    folder = cache_dir()
    if folder is None:
        return
    target = _entry_path(folder, path)
    _write(target, entry.encode(key_for(st, data, read_started_ns), parsed))
    _stored(folder, target)


def entry_target(path: Path) -> Path | None:
    """Where the entry for ``path`` goes (None when caching is off)."""
    folder = cache_dir()
    return None if folder is None else _entry_path(folder, path)


def temp_name(target: Path) -> Path:
    """A new file's name next to ``target``, to be renamed over it once complete."""
    return target.with_name(f".tmp-{os.getpid()}-{threading.get_ident()}-{next(_serial)}")


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


@contextmanager
def workers_store(private: bool = False) -> Iterator[Path]:
    """A folder where worker processes can store entries for this load to read back: the
    cache, or (when it is off or not writable, or ``private``) a temporary folder that is the
    cache until the block ends and is then removed (results read from it stay valid: small
    entries are read whole, big ones stay mapped). The folder is process-wide: a load in another
    thread meanwhile also uses it, which is as correct as using the cache (every entry still
    checked by its key), only not kept."""
    global _private
    folder = cache_dir()
    if not private and folder is not None and _writable(folder):
        try:
            yield folder
        finally:
            _usage.pop(folder, None)  # the workers stored entries this process did not count
            _stored(folder, None)
        return
    previous, _private = _private, Path(tempfile.mkdtemp(prefix="diagnose-records-"))
    try:
        yield _private
    finally:
        shutil.rmtree(_private, ignore_errors=True)
        _private = previous


def _write(target: Path, parts: Iterable[bytes]) -> None:
    """Write a new file next to ``target`` and rename it over ``target`` (never in place)."""
    tmp = temp_name(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.writelines(parts)
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, ValueError):
        pass


# -- keeping the folder to its bounds --------------------------------------------------------

_usage: dict[Path, list[int]] = {}  # folder -> [entries, bytes] as this process last knew them


def limits() -> tuple[int, int]:
    """(entries, bytes) the cache folder is kept under; from the environment, else defaults."""
    entries, megabytes = MAX_ENTRIES, MAX_MB
    with suppress(ValueError):
        entries = max(1, int(os.environ.get("DIAGNOSE_CACHE_MAX_ENTRIES", entries)))
    with suppress(ValueError):
        megabytes = max(0.0, float(os.environ.get("DIAGNOSE_CACHE_MAX_MB", megabytes)))
    return entries, int(megabytes * 1024 * 1024)


def _stored(folder: Path, target: Path | None) -> None:
    """Count a new entry; prune the folder when the count passes a bound."""
    max_entries, max_bytes = limits()
    usage = _usage.get(folder)
    if usage is not None and target is not None:
        try:
            usage[0] += 1
            usage[1] += os.stat(target).st_size
        except OSError:
            return
    if usage is None or usage[0] > max_entries or usage[1] > max_bytes:
        _usage[folder] = list(prune(folder, max_entries, max_bytes))


def prune(folder: Path, max_entries: int, max_bytes: int) -> tuple[int, int]:
    """Remove the least recently used entries past the bounds (the newest always stays) and
    stale temporary files; returns the (entries, bytes) left. Best effort: a file another
    process removed first, or one that cannot be removed, is passed over."""
    found: list[tuple[int, int, str]] = []
    now = time.time()
    try:
        with os.scandir(folder) as names:
            for item in names:
                try:
                    st = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if item.name.startswith(".tmp-"):
                    if now - st.st_mtime > STALE_TMP_S:
                        _remove(item.path)
                elif item.name.endswith(".marshal") and item.is_file(follow_symlinks=False):
                    found.append((st.st_mtime_ns, st.st_size, item.path))
    except OSError:
        return (0, 0)
    found.sort(reverse=True)  # most recently used first
    kept = total = 0
    for _, size, where in found:
        if kept and (kept >= max_entries or total + size > max_bytes):
            _remove(where)
            continue
        kept += 1
        total += size
    return kept, total


def _remove(where: str) -> None:
    with suppress(OSError):
        os.unlink(where)
