"""Files a user names, read within bounds: regular files only, and at most a size cap.

A path can name a FIFO (``open`` waits for a writer forever), a character device such as
``/dev/zero`` (endless), or a file far larger than anything diagnose needs. Every read of a
user-named path goes through :func:`read_bytes`: the file is opened without blocking, checked
with ``fstat`` to be a regular file, and read up to its cap plus one byte, so anything else
gets one line (:class:`UserFileError`) in bounded time and memory.

The caps hold real data with room to spare: records files 1 GiB (the loader is benchmarked on
a 196 MB file), reports 256 MiB, rule and config files 4 MiB. A log for ``diagnose match`` is
only read from its end (:data:`LOG_TAIL`, more than the matcher looks at): a file by seeking,
stdin by keeping the last bytes of at most :data:`STDIN_CAP`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MiB = 1 << 20
RECORDS_CAP = 1024 * MiB
REPORT_CAP = 256 * MiB
LOG_TAIL = 8 * MiB  # the matcher reads the last 2M characters of a log
STDIN_CAP = 256 * MiB
RULES_CAP = 4 * MiB
CONFIG_CAP = 4 * MiB
SCRIPT_CAP = 32 * MiB  # a training script to run or patch; far beyond any real one

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symlink"),
)


class UserFileError(Exception):
    """A user-named path that cannot be read: the message is one line naming the path."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO")."""
    return next((name for test, name in _KINDS if test(mode)), "not a plain file")


def size_words(cap: int) -> str:
    """A cap in words: ``4 MiB``."""
    return f"{cap // MiB} MiB" if cap >= MiB else f"{cap} bytes"


def read_bytes(path: str | Path, cap: int, tail: bool = False) -> bytes:
    """The bytes of the regular file at ``path``, at most ``cap`` of them.

    Raises :class:`UserFileError` (one line) for a missing path, anything that is not a
    regular file, and a file larger than ``cap`` -- unless ``tail``: then its last ``cap``
    bytes are the answer.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UserFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserFileError(f"{path}: not a regular file (a folder)") from None
    except OSError as exc:
        raise UserFileError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserFileError(f"{path}: not a regular file ({kind_of(mode)})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            if tail:
                fh.seek(max(0, os.fstat(fd).st_size - cap))
                return fh.read(cap)
            data = fh.read(cap + 1)
    except OSError as exc:
        raise UserFileError(f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise UserFileError(f"{path}: larger than the {size_words(cap)} a file may have here")
    return data


def read_text(path: str | Path, cap: int) -> str:
    """:func:`read_bytes` decoded as UTF-8; :class:`UserFileError` when it is not."""
    data = read_bytes(path, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_stream_tail(stream: Any, tail: int, cap: int) -> bytes | None:
    """The last ``tail`` bytes of a binary ``stream``, or None when it holds more than ``cap``."""
    kept = bytearray()
    total = 0
    while chunk := stream.read(MiB):
        total += len(chunk)
        if total > cap:
            return None
        kept += chunk
        if len(kept) > 2 * tail:
            del kept[: len(kept) - tail]
    return bytes(kept[-tail:])
