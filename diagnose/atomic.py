"""Write a file so that a reader sees either the old content or the new, never half of it.

The new content goes to a temporary file created exclusively in the target's own folder (a
rename is atomic only within one filesystem), is flushed to disk, and is then renamed over
the target. A signal that would end the process outright meanwhile (SIGTERM, SIGHUP with no
handler) waits until the file is in place, then ends it as it would have: no temporary file
outlives an interrupted write. A target that exists and is not a regular file
(``/dev/stdout``, a named pipe, a terminal) is a stream, not a file to replace: it is written
to directly. Another user's file (reached through a link someone planted) is never replaced:
the rename would put a file of this user's in its place.
"""

from __future__ import annotations

import _signal
import contextlib
import errno
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def is_stream(path: Path) -> bool:
    """True when ``path`` exists (after links) and is not a regular file or a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically; OSError when it cannot be done.

    A link at ``path`` is followed, so the file it points at is replaced and the link stays.
    The new file gets the old one's permissions, or the usual ones (0666 less the umask).
    """
    data = text.encode("utf-8")
    if is_stream(path):
        with open(path, "wb") as stream:
            stream.write(data)
        return
    target = Path(os.path.realpath(path))
    _refuse_foreign(target)
    mode = _mode_for(target)
    with signals_held():
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    _sync_folder(target.parent)


def _refuse_foreign(target: Path) -> None:
    try:
        owner = os.stat(target).st_uid
    except OSError:
        return
    if hasattr(os, "geteuid") and owner != os.geteuid():
        raise PermissionError(
            errno.EPERM, f"{target} belongs to another user (uid {owner}); not replaced"
        )


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """While entered (in the main thread), SIGTERM and SIGHUP with their default action are
    noted instead of ending the process; on leaving, a noted one is sent again and ends it.
    Handlers set by anyone (diagnose's own raise, and the write's cleanup runs) are left alone.
    The C-level functions are used: what ``signal.getsignal`` shows a script is not the point.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    saved = {}
    for signum in _ENDING:
        if _signal.getsignal(signum) == signal.SIG_DFL:
            saved[signum] = _signal.signal(signum, lambda signum, frame: noted.append(signum))
    try:
        yield
    finally:
        for signum, handler in saved.items():
            _signal.signal(signum, handler)
        if noted:
            os.kill(os.getpid(), noted[0])


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


def _read_umask() -> int:
    # Read once, at import: setting the umask to read it would race other threads' files.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _read_umask()


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every filesystem allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
