"""One rank's life under torchrun: trace, watch the other ranks, publish evidence, stop.

Three things can end a rank, and the first one wins (a lock, taken without blocking):
its own run ending (an event, an exception, or clean), another rank's claim to have ended
the run appearing in the launch's store (seen by a watcher thread, which runs even while
the main thread is blocked in a collective that will never complete), or SIGTERM from
torchrun's agent tearing the group down. Whichever wins publishes this rank's evidence in
the store; global rank 0 then gathers every rank's evidence and writes the one report, the
others print a line saying so, and a rank that did not end cleanly leaves at once, so that
no rank waits in a collective for one that is gone. Nothing here needs a shared folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from diagnose.distributed import evidence as ev
from diagnose.distributed.context import DistContext
from diagnose.distributed.evidence import TERMINAL
from diagnose.distributed.store import Connections
from diagnose.report import Report
from diagnose.safetext import one_line

POLL_S = 0.05
"""How often the watcher thread asks the store whether another rank ended the run."""
BEAT_EVERY = 10
"""The watcher bumps this rank's heartbeat every this many polls."""
GRACE_S = 0.5
"""After another rank ends, how long this rank may take to reach its own verdict (ranks in
step reach the same check within milliseconds) before it stops as "saw nothing"."""

T = TypeVar("T")


@dataclass
class Outcome:
    """What the rank reports back to the command: its exit status and, on the rank that
    combined the evidence, the combined raw report (analysis still to run)."""

    code: int
    combined: Report | None = None


class RankSession:
    """Runs on every rank; ``finish`` is called once by whichever ending comes first."""

    def __init__(self, ctx: DistContext, on_combined: Any) -> None:
        self.ctx = ctx
        self.on_combined = on_combined  # called with the combined raw Report, then we exit
        self.tracer: Any = None
        self.started = time.time()
        self.conns: Connections | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._old_sigterm: Any = None
        self._thread: threading.Thread | None = None
        self._step_hook: Any = None
        self.dtensor_params = False
        from diagnose.distributed.ddp import GradWatch

        self.grads = GradWatch()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        conns = Connections(self.ctx.store, self.ctx.namespace)
        try:
            conns.open()
            self.conns = conns
        except (RuntimeError, OSError) as exc:
            self._say(
                f"cannot reach {self.ctx.store.describe()} ({_first_line(exc)}); "
                "this rank reports on its own"
            )
        self.grads.install()
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._step_hook = register_optimizer_step_pre_hook(self._see_params)
        if threading.current_thread() is threading.main_thread():
            self._old_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
            signal.signal(signal.SIGHUP, self._on_sigterm)  # torchrun passes its SIGHUP on
        if self.conns is not None:
            self._thread = threading.Thread(
                target=self._watch, name="diagnose-rank-watch", daemon=True
            )
            self._thread.start()

    def set_tracer(self, tracer: Any) -> None:
        self.tracer = tracer

    def _see_params(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.dtensor_params:
            return
        for group in optimizer.param_groups:
            for p in group["params"]:
                if hasattr(p, "to_local") and hasattr(p, "device_mesh"):
                    self.dtensor_params = True
                    return

    def run_ended(self, report: Report) -> Outcome:
        """The script ended on this rank (event, exception, or clean)."""
        ended = time.time()
        if not self._lock.acquire(blocking=False):
            self._stop.wait()  # another path is finishing and will end the process
            while True:
                time.sleep(3600)
        evidence = self._own_evidence(report, ended)
        return self._finish(evidence)

    # -- the store -----------------------------------------------------------------------

    def _store(self, use: Callable[[Any], T]) -> T | None:
        """``use(store)`` on this thread's connection; None when there is no store or it
        has gone (node 0's agent ended), so that no ending fails for want of it."""
        if self.conns is None:
            return None
        try:
            return use(self.conns.open())
        except (RuntimeError, OSError, ValueError):
            return None

    def _peer_ended(self) -> dict[str, Any] | None:
        """The other rank that ended the run first, if one has."""
        holder = self._store(ev.terminal)
        if holder is None or holder.get("rank") == self.ctx.rank:
            return None
        return holder

    # -- the other two endings -----------------------------------------------------------

    def _watch(self) -> None:
        polls = 0
        while not self._stop.is_set():
            if polls % BEAT_EVERY == 0 and self._store(lambda s: ev.beat(s, self.ctx.rank)) is None:
                return  # the store is gone: nobody is left to tell
            polls += 1
            time.sleep(POLL_S)
            peer = self._peer_ended()
            if peer is None:
                continue
            deadline = time.time() + GRACE_S
            while time.time() < deadline:
                if self._lock.locked():
                    return  # this rank reached its own verdict
                time.sleep(POLL_S / 5)
            if not self._lock.acquire(blocking=False):
                return
            why = f"rank {peer.get('rank')} ended first ({peer.get('status')})"
            self.exit(self._finish(self._stopped_evidence(why, ended_by=peer.get("rank"))))

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        if not self._lock.acquire(blocking=False):
            return  # already finishing: let that finish, it ends the process
        peer = self._peer_ended()
        why = f"terminated by the launcher ({signal.Signals(signum).name})"
        if peer is not None:
            why += f" after rank {peer.get('rank')} ended ({peer.get('status')})"
        self.exit(
            self._finish(self._stopped_evidence(why, ended_by=peer.get("rank") if peer else None))
        )

    # -- evidence ------------------------------------------------------------------------

    def _base(self, status: str, ended: float) -> dict[str, Any]:
        from diagnose.distributed.ddp import process_group_config

        tracer = self.tracer
        history = list(getattr(tracer, "history", []) or [])
        steps = getattr(tracer, "steps_recorded", len(history))
        dist_config: dict[str, Any] = {"world_size": self.ctx.world_size, **process_group_config()}
        ddp = self.grads.config()
        if ddp is not None:
            dist_config["ddp"] = ddp
        if self.dtensor_params:
            dist_config["dtensor_parameters"] = True
        try:
            local = self.grads.local_summary(allow_device_read=status != "stopped")
        except Exception:
            local = None
        return {
            "rank": self.ctx.rank,
            "pid": os.getpid(),
            "status": status,
            "time": ended,
            "started": self.started,
            "step": getattr(tracer, "step", None),
            "history_length": steps,
            "last_loss": history[-1].loss if history else None,
            "local_grads": local,
            "distributed": dist_config,
        }

    def _own_evidence(self, report: Report, ended: float) -> dict[str, Any]:
        status = report.status
        peer = self._peer_ended() if status == "exception" else None
        if peer is not None:
            status = "stopped"  # e.g. "Connection closed by peer" in a collective
        data = self._base(status, ended)
        event = report.event
        if event is not None:
            data["step"] = event.step if event.step is not None else data["step"]
            data["phase"] = event.phase
            data["summary"] = event.message
            if event.kind == "exception":
                data["summary"] = f"raised {event.exception_type}: {event.message}"
            if status == "stopped":
                assert peer is not None
                data["summary"] = (
                    f"stopped after rank {peer.get('rank')} ended: raised "
                    f"{event.exception_type}: {event.message}"
                )
                data["ended_by"] = peer.get("rank")
        elif report.interruption is not None:
            data["summary"] = report.interruption.message
        else:
            steps = data["history_length"]
            data["summary"] = f"saw nothing: {steps} steps, every value finite"
        report.config.distributed = data["distributed"]  # type: ignore[attr-defined]
        data["report"] = report.model_dump(mode="json")
        return data

    def _stopped_evidence(self, why: str, ended_by: int | None) -> dict[str, Any]:
        data = self._base("stopped", time.time())
        steps = data["history_length"]
        data["summary"] = f"saw nothing in {steps} steps; {why}"
        data["ended_by"] = ended_by
        # What this rank saw, for a run that ends with no rank's event (a launch torn down
        # by SIGTERM): the combined report then still has frames, history and config.
        try:
            report = self.tracer.report() if self.tracer is not None else None
        except Exception:
            report = None
        if report is not None:
            report.config.distributed = data["distributed"]  # type: ignore[attr-defined]
            data["report"] = report.model_dump(mode="json")
        return data

    # -- the end ------------------------------------------------------------------------

    def _finish(self, evidence: dict[str, Any]) -> Outcome:
        """Publish this rank's evidence; on the combining rank, gather and report."""
        self._stop.set()
        rank, status = self.ctx.rank, evidence["status"]
        code = 0 if status == "clean" else 1
        published = self._store(lambda s: ev.publish(s, rank, evidence)) is not None
        if published and status in TERMINAL:
            self._store(lambda s: ev.claim_terminal(s, rank, status, evidence["time"]))
        if not published or self.ctx.combines:
            found = {rank: evidence}
            if published:
                found = self._store(lambda s: ev.gather(s, self.ctx.world_size)) or found
            return self._report(found, through_store=published)
        if self.ctx.aggregator == "rank0":
            self._say(
                f"{evidence['summary']}; the report of all {self.ctx.world_size} ranks "
                "comes from rank 0 (node 0)"
            )
        elif status in TERMINAL:
            self._say(evidence["summary"])
        return Outcome(code)

    def _report(self, found: dict[int, dict[str, Any]], through_store: bool) -> Outcome:
        from diagnose.distributed.combine import combine

        report = combine(found, self.ctx.world_size)
        try:
            self.on_combined(report)
        finally:
            if through_store:  # the launch is over: a later one may use the same store
                self._store(lambda s: ev.forget(s, self.ctx.world_size))
                if self.ctx.store.private_dir is not None:
                    shutil.rmtree(self.ctx.store.private_dir, ignore_errors=True)
        return Outcome(0 if report.status == "clean" else 1, report)

    def _say(self, text: str) -> None:
        print(
            f"diagnose: rank {self.ctx.rank} (node {self.ctx.node}): {one_line(text)}",
            file=sys.stderr,
        )

    def exit(self, outcome: Outcome) -> None:
        """End the process at once with the outcome's status, output flushed (diagnose's own
        exit: not the script's ``os._exit``, which the runner reports)."""
        from diagnose.interrupts import real_exit

        real_exit(outcome.code)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
