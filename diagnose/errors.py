"""Exit statuses and the one-line errors the CLI reports."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    CLEAN = 0  # a clean run, a valid dataset, a match found
    DIAGNOSED = 1  # a problem was diagnosed: non-finite event, script exception, bad records
    USAGE = 2  # diagnose's own usage or input error


class UsageError(Exception):
    """Bad usage or input: the CLI prints the message as one line and exits 2."""
