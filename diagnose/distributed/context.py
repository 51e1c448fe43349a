"""Where a rank stands in a launch, read from the environment torchrun sets for it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from diagnose.distributed.store import RUN_DIR_ENV, StoreAddress, address_from_env, namespace

__all__ = ["AGGREGATOR_ENV", "RUN_DIR_ENV", "DistContext"]

AGGREGATOR_ENV = "DIAGNOSE_AGGREGATOR"
"""``parent`` when ``diagnose --nproc`` combines the evidence itself after the launch."""


@dataclass(frozen=True)
class DistContext:
    """One rank of a multi-process launch, and the store its launch meets in.

    ``aggregator`` says who combines every rank's evidence into the one report: global rank
    0 (on node 0, where torchrun's agent hosts the store), or the ``diagnose --nproc``
    process after the launch.
    """

    rank: int
    world_size: int
    local_rank: int
    node: int
    store: StoreAddress
    namespace: str
    aggregator: Literal["rank0", "parent"]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DistContext | None:
        """The context of a rank started by torchrun (or any launcher setting RANK and
        WORLD_SIZE); None for a single process."""
        env = os.environ if env is None else env
        try:
            rank = int(env["RANK"])
            world = int(env["WORLD_SIZE"])
        except (KeyError, ValueError):
            return None
        if world < 2 or not 0 <= rank < world:
            return None
        aggregator: Literal["rank0", "parent"] = (
            "parent" if env.get(AGGREGATOR_ENV) == "parent" else "rank0"
        )
        return cls(
            rank=rank,
            world_size=world,
            local_rank=_int(env.get("LOCAL_RANK"), rank),
            node=_int(env.get("GROUP_RANK"), 0),
            store=address_from_env(env, rank),
            namespace=namespace(env),
            aggregator=aggregator,
        )

    @property
    def combines(self) -> bool:
        """True on the one rank that gathers the evidence and writes the report."""
        return self.aggregator == "rank0" and self.rank == 0


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
