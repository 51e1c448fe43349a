"""The operator registry: each operator is a source transform with the truth it yields.

An operator is a function of a parsed base (``Script``) and a seeded ``random.Random`` that
returns a ``Mutant`` (the new source and, for a fault with one producer, a fragment of the line
that produces it), or a ``Skip`` saying why it does not apply. It never forces itself onto a
script that lacks the place it acts on.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.corpus.source import Script


@dataclass(frozen=True)
class Mutant:
    code: str
    what: str
    producer: str | None = None  # a fragment of the producer's (new) line
    module: str | None = None  # the producer's module path in the root model


@dataclass(frozen=True)
class Skip:
    why: str


Make = Callable[[Script, random.Random], "Mutant | Skip"]


@dataclass(frozen=True)
class Operator:
    name: str
    family: str | None
    fixes: tuple[str, ...]
    make: Make

    @property
    def healthy(self) -> bool:
        return self.family is None


REGISTRY: dict[str, Operator] = {}


def operator(name: str, family: str | None = None, fixes: tuple[str, ...] = ()):
    """Register a fault operator (``family`` set) or a healthy variation (``family`` None)."""

    def register(make: Make) -> Make:
        if name in REGISTRY:
            raise ValueError(f"operator {name} registered twice")
        REGISTRY[name] = Operator(name, family, fixes, make)
        return make

    return register


def all_operators() -> dict[str, Operator]:
    """Every operator, its modules imported (they register themselves)."""
    from benchmarks.corpus import ops_crash, ops_healthy, ops_nonfinite, ops_silent  # noqa: F401

    return REGISTRY
