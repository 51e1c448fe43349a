"""The bounds of the tracing options, checked in one place for every way in.

``diagnose --frames 0``, ``Tracer(frames=0)`` and ``diagnose_script(..., frames=0)`` are
the same mistake, so they are refused with the same words; only the option's name is spelled
as the caller spells it (``--frames`` on the command line, ``frames`` in Python).
"""

from __future__ import annotations

__all__ = [
    "MAX_FRAMES",
    "MAX_NPROC",
    "OptionError",
    "at_least_one",
    "check_run",
    "check_tracing",
    "flag",
]

# Upper bounds where a huge number costs memory or processes, not only time: each kept frame
# holds tensor statistics for the whole run (and the ring buffer's size must fit a C size),
# and every rank of ``--nproc`` is a process with torch loaded.
MAX_FRAMES = 10_000
MAX_NPROC = 128


class OptionError(ValueError):
    """An option outside its bounds; ``name`` is the option as the Python API spells it."""

    def __init__(self, name: str, value: object, requirement: str) -> None:
        self.name = name
        self.value = value
        self.requirement = requirement
        super().__init__(self.says(name))

    def says(self, spelled: str) -> str:
        """The one line for this mistake, naming the option as ``spelled``."""
        return f"{spelled} must be {self.requirement}, not {self.value!r}"


def flag(name: str) -> str:
    """The command-line spelling of a Python option name: ``max_steps`` -> ``--max-steps``."""
    return "--" + name.replace("_", "-")


def at_least_one(name: str, value: object, at_most: int | None = None) -> None:
    """A count or a period: a whole number of at least 1 (a bool is no number here), and at
    most ``at_most`` when given."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(name, value, "a whole number")
    if value < 1:
        raise OptionError(name, value, "at least 1")
    if at_most is not None and value > at_most:
        raise OptionError(name, _short(value), f"at most {at_most:,}")


def _short(value: int) -> object:
    """A huge number as its first digits and length, so the error stays one short line."""
    digits = str(value) if value.bit_length() < 14_000 else None
    if digits is not None and len(digits) <= 24:
        return value
    return f"{digits[:8] if digits else 'a'}... ({len(digits) if digits else 'over 4,000'} digits)"


def check_tracing(
    *,
    frames: object = 21,
    sample_every: object = 1,
    detail_every: object = 16,
    detail_first: object = 1,
) -> None:
    """What ``Tracer(...)`` takes: the ring buffer's size and the sampling periods."""
    at_least_one("frames", frames, at_most=MAX_FRAMES)
    for name, value in (
        ("sample_every", sample_every),
        ("detail_every", detail_every),
        ("detail_first", detail_first),
    ):
        at_least_one(name, value)


def check_run(
    *,
    frames: object = 21,
    sample_every: object = 1,
    detail_every: object = 16,
    max_steps: object = None,
) -> None:
    """What a run takes (the command line, ``RunOptions``): the tracing options and the step cap."""
    check_tracing(frames=frames, sample_every=sample_every, detail_every=detail_every)
    if max_steps is not None:
        at_least_one("max_steps", max_steps)
