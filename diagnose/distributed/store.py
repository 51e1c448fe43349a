"""Where the ranks of one launch meet: a c10d Store, reached without any shared folder.

torchrun's elastic agent on node 0 already hosts a TCPStore for the whole job (its address
is MASTER_ADDR/MASTER_PORT and TORCHELASTIC_USE_AGENT_STORE says so), and it outlives the
ranks: it exists before the script calls ``init_process_group``, after it destroys its
process group, and while a crashed rank's peers are still writing. Every rank connects to
it as a client and works under a ``PrefixStore`` namespace of its own. Other ways to reach a
store, in order: an address given by ``diagnose --nproc`` (DIAGNOSE_STORE), a FileStore in a
folder the user shares between the ranks (DIAGNOSE_RUN_DIR), a TCPStore that rank 0 hosts
at MASTER_ADDR/MASTER_PORT (multi-tenant, so the script's own ``env://`` initialisation
shares it), and last a FileStore in a folder the ranks of one node agree on.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

STORE_ENV = "DIAGNOSE_STORE"
"""``host:port`` of a TCPStore server the ranks connect to (set by ``diagnose --nproc``)."""
RUN_ID_ENV = "DIAGNOSE_RUN_ID"
"""Names the launch in the store when torchrun's own run id does not tell launches apart."""
RUN_DIR_ENV = "DIAGNOSE_RUN_DIR"
"""A folder every rank can reach, for launchers that give the ranks no store address."""
CONNECT_S = 60.0
"""How long a rank keeps trying to reach the store (rank 0 may still be starting it)."""


@dataclass(frozen=True)
class StoreAddress:
    """How to reach the launch's store; ``connect`` opens a connection to it."""

    kind: Literal["tcp", "file"]
    host: str = ""
    port: int = 0
    serve: bool = False
    """True on the one rank that starts the TCPStore server itself."""
    path: Path | None = None
    """The FileStore's file (``kind == "file"``)."""
    private_dir: Path | None = None
    """A folder made for this launch alone, removed once the report is combined."""

    def describe(self) -> str:
        if self.kind == "tcp":
            return f"the TCPStore at {self.host}:{self.port}"
        return f"the FileStore {self.path}"

    def connect(self, timeout_s: float = CONNECT_S) -> Any:
        """A new connection (a c10d Store); raises when the store cannot be reached."""
        import torch.distributed as dist

        timeout = timedelta(seconds=timeout_s)
        if self.kind == "file":
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return dist.FileStore(str(self.path), -1)
        return dist.TCPStore(
            self.host,
            self.port,
            is_master=self.serve,
            timeout=timeout,
            wait_for_workers=False,
            multi_tenant=self.serve,
        )


def address_from_env(env: Mapping[str, str], rank: int) -> StoreAddress:
    """The store of the launch this rank belongs to, from the variables the launcher set."""
    given = _host_port(env.get(STORE_ENV, ""))
    if given is not None:
        return StoreAddress("tcp", host=given[0], port=given[1])
    master = _host_port(f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}")
    if master is not None and env.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        return StoreAddress("tcp", host=master[0], port=master[1])
    shared = env.get(RUN_DIR_ENV)
    if shared:
        return StoreAddress("file", path=Path(shared) / "diagnose.store")
    if master is not None:
        return StoreAddress("tcp", host=master[0], port=master[1], serve=rank == 0)
    folder = _node_dir(env)
    return StoreAddress("file", path=folder / "diagnose.store", private_dir=folder)


def namespace(env: Mapping[str, str]) -> str:
    """The same on every rank of one launch attempt, on every node: a restart, or another
    job on the same store, gets another one."""
    run_id = env.get(RUN_ID_ENV) or env.get("TORCHELASTIC_RUN_ID") or "none"
    restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
    return f"diagnose/{_safe(run_id)}/attempt-{_safe(restart)}/"


class Connections:
    """One store connection per thread: the watcher thread polls while the main thread (or
    its SIGTERM handler) publishes, and a connection is one socket."""

    def __init__(self, address: StoreAddress, prefix: str) -> None:
        self.address = address
        self.prefix = prefix
        self._local = threading.local()
        self._server: Any = None

    def open(self) -> Any:
        """This thread's namespaced store; the first call on the serving rank starts the
        server, which then lives as long as this object."""
        store = getattr(self._local, "store", None)
        if store is None:
            import torch.distributed as dist

            if self.address.serve and self._server is None:
                self._server = self.address.connect()
                base = self._server
            else:
                base = StoreAddress(
                    self.address.kind, self.address.host, self.address.port, path=self.address.path
                ).connect()
            store = dist.PrefixStore(self.prefix, base)
            self._local.store = store
        return store


def _host_port(text: str) -> tuple[str, int] | None:
    host, sep, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def _node_dir(env: Mapping[str, str]) -> Path:
    """A folder all local ranks of one launch agree on without talking to each other.

    torchrun's run id is "none" unless given, so the agent's pid (the ranks' parent) and the
    restart count tell launches apart.
    """
    run_id = _safe(env.get("TORCHELASTIC_RUN_ID", "none"))
    restart = _safe(env.get("TORCHELASTIC_RESTART_COUNT", "0"))
    port = _safe(env.get("MASTER_PORT", "0"))
    return Path(tempfile.gettempdir()) / f"diagnose-run-{run_id}-{os.getppid()}-{port}-{restart}"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:64]
