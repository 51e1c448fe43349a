"""Exit statuses and the one-line errors the CLI reports."""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitStatus(IntEnum):
    CLEAN = 0  # a clean run that trained, a valid dataset, a match found
    DIAGNOSED = 1  # a problem was diagnosed: non-finite event, script exception, bad records
    # A run that took no training step and whose script exited 0 (its ``--help``, a guard
    # that returned early): never clean, and nothing else to say by its status. A script that
    # exited non-zero on its own, untrained or after a healthy run, gives its own status.
    UNTRAINED = 1
    USAGE = 2  # diagnose's own usage or input error
    INTERNAL = 70  # EX_SOFTWARE: a bug in diagnose itself (one line; --debug adds the traceback)
    HANGUP = 129  # 128 + SIGHUP: the run was stopped by SIGHUP (its terminal went away)
    INTERRUPTED = 130  # 128 + SIGINT: the run (or its analysis) was stopped by Ctrl-C
    STDOUT_CLOSED = 141  # 128 + SIGPIPE: the reader of diagnose's output went away
    TERMINATED = 143  # 128 + SIGTERM: the run was stopped by SIGTERM


class UsageError(Exception):
    """Bad usage or input: the CLI prints the message as one line and exits 2."""


def read_user_text(
    path: Path, what: str, error: type[Exception] = UsageError, cap: int | None = None
) -> str:
    """A file the user named, as UTF-8 text; ``error`` with one line saying why it can't be.

    ``what`` names the file in the message ("config file", "report file"). Only a regular file
    of at most ``cap`` bytes is read (see :mod:`diagnose.userfiles`; default: a rules/config
    file's cap), so a FIFO, a device or a huge file is refused in bounded time.
    """
    from diagnose.userfiles import CONFIG_CAP, UserFileError, read_text

    try:
        return read_text(path, CONFIG_CAP if cap is None else cap)
    except UserFileError as exc:
        message = str(exc)
        if message == f"{path}: no such file":
            message = f"{path}: no such {what}"
        elif message == f"{path}: not a regular file (a folder)":
            message = f"{path}: is a folder, not a {what}"
        raise error(message) from None
