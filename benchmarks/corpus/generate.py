"""Cases from a seed: which operator on which base, the mutant's source and its truth.

A case is named ``SEED:INDEX`` and depends on nothing else: its own ``random.Random`` picks a
healthy variation or a fault (about one case in four is healthy), then an operator, then one of
the bases that operator applies to, then the operator's own parameters. A sample is the cases
``SEED:0``, ``SEED:1``, ... kept while they match the family asked for, so any case of any
sample can be made again from its name alone.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from pathlib import Path

from benchmarks.corpus.operators import Mutant, Operator, Skip, all_operators
from benchmarks.corpus.source import Script
from benchmarks.corpus.truth import Truth, locate

BASES = Path(__file__).resolve().parent / "bases"
HEALTHY_SHARE = 0.27
HEALTHY = "healthy"


@dataclass(frozen=True)
class Case:
    seed: int
    index: int
    base: str
    code: str
    truth: Truth

    @property
    def name(self) -> str:
        return f"{self.seed}:{self.index}"


def base_names() -> list[str]:
    return sorted(p.stem for p in BASES.glob("*.py") if not p.stem.startswith("_"))


@functools.cache
def base_code(name: str) -> str:
    return (BASES / f"{name}.py").read_text()


@functools.cache
def base_script(name: str) -> Script:
    return Script.parse(base_code(name))


def mutate(base: str, op: Operator, rng: random.Random) -> Mutant | Skip:
    return op.make(base_script(base), rng)


@functools.cache
def applicable(op_name: str) -> tuple[str, ...]:
    """The bases an operator applies to (its parameters do not change whether it applies)."""
    op = all_operators()[op_name]
    return tuple(b for b in base_names() if isinstance(mutate(b, op, random.Random(0)), Mutant))


def truth_of(base: str, op: Operator, mutant: Mutant) -> Truth:
    line = locate(mutant.code, base_code(base), mutant.producer) if mutant.producer else None
    root = base_script(base).root()
    return Truth(
        operator=op.name,
        healthy=op.healthy,
        family=op.family,
        fixes=op.fixes,
        what=mutant.what,
        line=line,
        module=mutant.module if line is not None else None,
        root=root[0] if root and line is not None and mutant.module is not None else None,
    )


def pick(seed: int, index: int) -> tuple[Operator, str, random.Random]:
    """The operator and base of case ``seed:index`` (cheap: nothing is transformed)."""
    rng = random.Random(f"corpus:{seed}:{index}")
    ops = sorted(all_operators().values(), key=lambda o: o.name)
    healthy = rng.random() < HEALTHY_SHARE
    group = [o for o in ops if o.healthy == healthy and applicable(o.name)]
    op = rng.choice(group)
    return op, rng.choice(applicable(op.name)), rng


def make_case(seed: int, index: int) -> Case:
    op, base, rng = pick(seed, index)
    mutant = mutate(base, op, rng)
    if isinstance(mutant, Skip):  # applicable() said it applies: parameters must not change that
        raise RuntimeError(f"{op.name} on {base} skipped with a seed: {mutant.why}")
    return Case(seed, index, base, mutant.code, truth_of(base, op, mutant))


def family_of(op: Operator) -> str:
    return HEALTHY if op.healthy else str(op.family)


def sample(seed: int, count: int, family: str | None = None, limit: int = 100_000) -> list[Case]:
    """``count`` cases of seed ``seed``, in index order, only of ``family`` when given."""
    cases: list[Case] = []
    index = 0
    while len(cases) < count and index < limit:
        op, _, _ = pick(seed, index)
        if family is None or family in (family_of(op), op.name):
            cases.append(make_case(seed, index))
        index += 1
    return cases
