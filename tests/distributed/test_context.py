"""A rank knows where it stands, and where its launch's store is, from torchrun's variables."""

from pathlib import Path

from diagnose.distributed.context import AGGREGATOR_ENV, RUN_DIR_ENV, DistContext
from diagnose.distributed.store import RUN_ID_ENV, STORE_ENV

TORCHRUN_ENV = {
    "RANK": "1",
    "WORLD_SIZE": "2",
    "LOCAL_RANK": "0",
    "LOCAL_WORLD_SIZE": "1",
    "GROUP_RANK": "1",
    "TORCHELASTIC_RUN_ID": "job7",
    "TORCHELASTIC_RESTART_COUNT": "0",
    "TORCHELASTIC_USE_AGENT_STORE": "True",
    "MASTER_ADDR": "node0.cluster",
    "MASTER_PORT": "29500",
}


def test_a_single_process_is_not_distributed():
    assert DistContext.from_env({}) is None
    assert DistContext.from_env({"RANK": "0", "WORLD_SIZE": "1"}) is None
    assert DistContext.from_env({"RANK": "x", "WORLD_SIZE": "2"}) is None
    assert DistContext.from_env({"RANK": "2", "WORLD_SIZE": "2"}) is None


def test_every_rank_on_every_node_is_a_client_of_the_agent_store_on_node_0():
    one = DistContext.from_env(TORCHRUN_ENV)
    zero = DistContext.from_env({**TORCHRUN_ENV, "RANK": "0", "GROUP_RANK": "0"})
    assert one is not None and zero is not None
    assert (one.rank, one.world_size, one.local_rank, one.node) == (1, 2, 0, 1)
    for ctx in (one, zero):
        assert (ctx.store.kind, ctx.store.host, ctx.store.port) == ("tcp", "node0.cluster", 29500)
        assert not ctx.store.serve  # torchrun's agent hosts it
    assert one.namespace == zero.namespace
    assert zero.combines and not one.combines


def test_the_agent_store_wins_over_a_run_folder_that_need_not_be_shared(tmp_path: Path):
    ctx = DistContext.from_env({**TORCHRUN_ENV, RUN_DIR_ENV: str(tmp_path)})
    assert ctx.store.kind == "tcp"


def test_a_restart_or_another_job_gets_another_namespace():
    first = DistContext.from_env(TORCHRUN_ENV)
    restarted = DistContext.from_env({**TORCHRUN_ENV, "TORCHELASTIC_RESTART_COUNT": "1"})
    other = DistContext.from_env({**TORCHRUN_ENV, "TORCHELASTIC_RUN_ID": "job8"})
    assert len({first.namespace, restarted.namespace, other.namespace}) == 3


def test_diagnose_nproc_gives_its_own_store_and_combines_in_the_parent():
    env = {**TORCHRUN_ENV, STORE_ENV: "127.0.0.1:4242", RUN_ID_ENV: "abc", AGGREGATOR_ENV: "parent"}
    ctx = DistContext.from_env(env)
    assert (ctx.store.host, ctx.store.port, ctx.aggregator) == ("127.0.0.1", 4242, "parent")
    assert "abc" in ctx.namespace and not ctx.combines


def test_without_an_agent_store_rank_0_hosts_one_at_the_master_address():
    env = {k: v for k, v in TORCHRUN_ENV.items() if k != "TORCHELASTIC_USE_AGENT_STORE"}
    zero = DistContext.from_env({**env, "RANK": "0"})
    one = DistContext.from_env(env)
    assert zero.store.serve and not one.store.serve
    assert zero.store.port == one.store.port == 29500


def test_with_no_address_at_all_a_run_folder_holds_a_file_store(tmp_path: Path):
    bare = {"RANK": "1", "WORLD_SIZE": "2"}
    shared = DistContext.from_env({**bare, RUN_DIR_ENV: str(tmp_path)})
    assert shared.store.kind == "file" and shared.store.path.parent == tmp_path
    assert shared.store.private_dir is None  # the user's folder is never removed
    local = DistContext.from_env(bare)
    assert local.store.kind == "file" and local.store.private_dir is not None
    assert local.store == DistContext.from_env({**bare, "RANK": "0"}).store


def test_a_malformed_address_is_not_used():
    env = {**TORCHRUN_ENV, STORE_ENV: "nohost", "MASTER_PORT": "99999"}
    ctx = DistContext.from_env(env)
    assert ctx.store.kind == "file"
