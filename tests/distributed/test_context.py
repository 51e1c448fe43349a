"""A rank knows where it stands from the environment torchrun gives it."""

from pathlib import Path

from diagnose.distributed.context import AGGREGATOR_ENV, RUN_DIR_ENV, DistContext

TORCHRUN_ENV = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                "TORCHELASTIC_RUN_ID": "none", "TORCHELASTIC_RESTART_COUNT": "0",
                "MASTER_PORT": "29500"}


def test_a_single_process_is_not_distributed():
    assert DistContext.from_env({}) is None
    assert DistContext.from_env({"RANK": "0", "WORLD_SIZE": "1"}) is None
    assert DistContext.from_env({"RANK": "x", "WORLD_SIZE": "2"}) is None


def test_ranks_of_one_launch_agree_on_a_run_folder_without_talking():
    one = DistContext.from_env(TORCHRUN_ENV)
    other = DistContext.from_env({**TORCHRUN_ENV, "RANK": "0", "LOCAL_RANK": "0"})
    assert one is not None and other is not None
    assert (one.rank, one.world_size, one.local_rank) == (1, 2, 1)
    assert one.run_dir == other.run_dir
    assert one.aggregator == "last" and one.expected == 2


def test_a_restart_or_another_launch_gets_another_folder():
    first = DistContext.from_env(TORCHRUN_ENV)
    restarted = DistContext.from_env({**TORCHRUN_ENV, "TORCHELASTIC_RESTART_COUNT": "1"})
    other_port = DistContext.from_env({**TORCHRUN_ENV, "MASTER_PORT": "29501"})
    assert first.run_dir != restarted.run_dir != other_port.run_dir


def test_an_explicit_folder_counts_every_rank_of_the_job(tmp_path: Path):
    env = {**TORCHRUN_ENV, "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4",
           RUN_DIR_ENV: str(tmp_path), AGGREGATOR_ENV: "parent"}
    ctx = DistContext.from_env(env)
    assert ctx.run_dir == tmp_path and ctx.expected == 8 and ctx.aggregator == "parent"
    derived = DistContext.from_env({**TORCHRUN_ENV, "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4"})
    assert derived.expected == 4  # a node-local folder only ever sees this node's ranks
