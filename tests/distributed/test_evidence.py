"""Evidence travels through a real c10d TCPStore: whole or not at all, and the rank that
gathers waits for ranks that are running but not for one that has died."""

from __future__ import annotations

import secrets
import threading
import time
from datetime import timedelta

import pytest
import torch.distributed as dist

from diagnose.distributed import evidence as ev


@pytest.fixture(params=["tcp", "file"])
def store(request, tmp_path):
    """A namespaced connection to a real TCPStore server, or to a FileStore in a folder."""
    if request.param == "file":
        yield dist.PrefixStore(
            "diagnose/test/attempt-0/", dist.FileStore(str(tmp_path / "diagnose.store"), -1)
        )
        return
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    client = dist.TCPStore("127.0.0.1", server.port, is_master=False, timeout=timedelta(seconds=10))
    yield dist.PrefixStore("diagnose/test/attempt-0/", client)
    del client, server


def test_evidence_larger_than_one_store_message_arrives_whole(store):
    # hex of random bytes compresses to about half: well over the 8 MiB a message may carry
    data = {"rank": 1, "status": "nonfinite", "report": {"blob": secrets.token_hex(9_000_000)}}
    assert ev.publish(store, 1, data) > ev.CHUNK
    assert ev.read_one(store, 1) == data
    assert ev.read_one(store, 0) is None


def test_the_first_rank_to_end_the_run_holds_it(store):
    assert ev.terminal(store) is None
    assert ev.claim_terminal(store, 1, "exception", 5.0)["rank"] == 1
    assert ev.claim_terminal(store, 0, "stopped", 4.0) == {
        "rank": 1,
        "status": "exception",
        "time": 5.0,
    }
    assert ev.terminal(store)["rank"] == 1


def test_gather_gives_up_on_a_rank_whose_heartbeat_stopped(store):
    ev.publish(store, 0, {"rank": 0})
    ev.beat(store, 1)  # rank 1 started, then died without publishing
    found = ev.gather(store, 2, stale_s=0.3, poll_s=0.02)
    assert found == {0: {"rank": 0}}


def test_gather_waits_for_a_rank_that_is_still_running(store):
    ev.publish(store, 0, {"rank": 0})

    def slow_rank() -> None:
        for _ in range(10):  # runs three times as long as the staleness limit, beating
            ev.beat(store, 1)
            time.sleep(0.1)
        ev.publish(store, 1, {"rank": 1})

    thread = threading.Thread(target=slow_rank)
    thread.start()
    found = ev.gather(store, 2, stale_s=0.3, poll_s=0.02)
    thread.join()
    assert sorted(found) == [0, 1]


def test_a_combined_launch_leaves_no_keys_behind(store):
    ev.publish(store, 0, {"rank": 0})
    ev.beat(store, 0)
    ev.claim_terminal(store, 0, "nonfinite", 1.0)
    ev.forget(store, 2)
    assert not store.check(["terminal"]) and ev.read_all(store, 2) == {}
    assert not store.check(["evidence/0/0", "alive/0"])
