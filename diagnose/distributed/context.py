"""Where a rank stands in a launch, read from the environment torchrun sets for it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

RUN_DIR_ENV = "DIAGNOSE_RUN_DIR"
"""Folder the ranks of one launch share; set by ``diagnose --nproc`` or by the user (for
several nodes, point it at a shared file system)."""
AGGREGATOR_ENV = "DIAGNOSE_AGGREGATOR"
"""``parent`` when ``diagnose --nproc`` combines the evidence itself after the launch."""


@dataclass(frozen=True)
class DistContext:
    """One rank of a multi-process launch.

    ``expected`` is how many evidence files make the run complete: every rank of the job when
    the run folder was given explicitly, else the ranks of this node (the folder derived from
    torchrun's variables lives on this node only).
    """

    rank: int
    world_size: int
    local_rank: int
    expected: int
    run_dir: Path
    aggregator: Literal["last", "parent"]

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
        if world < 2:
            return None
        local_rank = _int(env.get("LOCAL_RANK"), rank)
        local_world = _int(env.get("LOCAL_WORLD_SIZE"), world)
        explicit = env.get(RUN_DIR_ENV)
        if explicit:
            run_dir, expected = Path(explicit), world
        else:
            run_dir, expected = _derived_run_dir(env), local_world
        aggregator = "parent" if env.get(AGGREGATOR_ENV) == "parent" else "last"
        return cls(rank=rank, world_size=world, local_rank=local_rank, expected=expected,
                   run_dir=run_dir, aggregator=aggregator)


def _derived_run_dir(env: Mapping[str, str]) -> Path:
    """A folder all local ranks of one launch agree on without talking to each other.

    torchrun's run id is "none" unless given, so the agent's pid (the ranks' parent) and the
    restart count tell launches apart.
    """
    run_id = env.get("TORCHELASTIC_RUN_ID", "none")
    restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
    port = env.get("MASTER_PORT", "0")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)[:64]
    name = f"diagnose-run-{safe}-{os.getppid()}-{port}-{restart}"
    return Path(tempfile.gettempdir()) / name


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
