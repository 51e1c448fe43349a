"""One rank's life under torchrun: trace, watch the other ranks, write evidence, stop.

Three things can end a rank, and the first one wins (a lock, taken without blocking):
its own run ending (an event, an exception, or clean), another rank's terminal evidence
appearing in the run folder (seen by a watcher thread, which runs even while the main
thread is blocked in a collective that will never complete), or SIGTERM from torchrun's
agent tearing the group down. Whichever wins writes this rank's evidence; a rank that did
not end cleanly then leaves at once, so that no rank waits in a collective for one that is
gone.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose.distributed.context import DistContext
from diagnose.distributed.evidence import TERMINAL, peer_terminal, read_evidence, write_evidence
from diagnose.report import Report

POLL_S = 0.05
"""How often the watcher thread looks at the run folder."""
GRACE_S = 0.5
"""After another rank ends, how long this rank may take to reach its own verdict (ranks in
step reach the same check within milliseconds) before it stops as "saw nothing"."""


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
        self.ctx.run_dir.mkdir(parents=True, exist_ok=True)
        self.grads.install()
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._step_hook = register_optimizer_step_pre_hook(self._see_params)
        if threading.current_thread() is threading.main_thread():
            self._old_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        self._thread = threading.Thread(target=self._watch, name="diagnose-rank-watch",
                                        daemon=True)
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

    # -- the other two endings -----------------------------------------------------------

    def _watch(self) -> None:
        while not self._stop.is_set():
            time.sleep(POLL_S)
            peer = peer_terminal(self.ctx.run_dir, self.ctx.rank)
            if peer is None:
                continue
            deadline = time.time() + GRACE_S
            while time.time() < deadline:
                if self._lock.locked():
                    return  # this rank reached its own verdict
                time.sleep(POLL_S / 5)
            if not self._lock.acquire(blocking=False):
                return
            rank, data = peer
            why = f"rank {rank} ended first ({data.get('status')})"
            self.exit(self._finish(self._stopped_evidence(why, ended_by=rank)))

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        if not self._lock.acquire(blocking=False):
            return  # already finishing: let that finish, it ends the process
        peer = peer_terminal(self.ctx.run_dir, self.ctx.rank)
        why = "terminated by the launcher (SIGTERM)"
        if peer is not None:
            why += f" after rank {peer[0]} ended ({peer[1].get('status')})"
        self.exit(self._finish(self._stopped_evidence(why,
                                                       ended_by=peer[0] if peer else None)))

    # -- evidence ------------------------------------------------------------------------

    def _base(self, status: str, ended: float) -> dict[str, Any]:
        from diagnose.distributed.ddp import process_group_config

        tracer = self.tracer
        history = list(getattr(tracer, "history", []) or [])
        steps = getattr(tracer, "steps_recorded", len(history))
        dist_config: dict[str, Any] = {"world_size": self.ctx.world_size,
                                       **process_group_config()}
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
            "rank": self.ctx.rank, "pid": os.getpid(), "status": status, "time": ended,
            "started": self.started, "step": getattr(tracer, "step", None),
            "history_length": steps,
            "last_loss": history[-1].loss if history else None,
            "local_grads": local, "distributed": dist_config,
        }

    def _own_evidence(self, report: Report, ended: float) -> dict[str, Any]:
        status = report.status
        peer = peer_terminal(self.ctx.run_dir, self.ctx.rank) if status == "exception" else None
        if peer is not None and peer[1].get("time", ended) <= ended:
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
                data["summary"] = (f"stopped after rank {peer[0]} ended: raised "
                                   f"{event.exception_type}: {event.message}")
                data["ended_by"] = peer[0]
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
        """Write this rank's evidence; combine when this rank completes the set."""
        self._stop.set()
        write_evidence(self.ctx.run_dir, self.ctx.rank, evidence)
        code = 0 if evidence["status"] == "clean" else 1
        if self.ctx.aggregator == "last":
            from diagnose.distributed.combine import combine
            from diagnose.distributed.evidence import claim

            found = read_evidence(self.ctx.run_dir)
            if len(found) >= self.ctx.expected and claim(self.ctx.run_dir, "combined.lock"):
                report = combine(found, self.ctx.world_size)
                code = 0 if report.status == "clean" else 1
                try:
                    self.on_combined(report)
                finally:
                    _remove_run_dir(self.ctx.run_dir)
                return Outcome(code, report)
        if evidence["status"] in TERMINAL:
            print(f"diagnose: rank {self.ctx.rank}: {evidence['summary']}", file=sys.stderr)
        return Outcome(code)

    def exit(self, outcome: Outcome) -> None:
        """End the process at once with the outcome's status, output flushed (diagnose's own
        exit: not the script's ``os._exit``, which the runner reports)."""
        from diagnose.interrupts import real_exit

        real_exit(outcome.code)


def _remove_run_dir(run_dir: Path) -> None:
    import shutil

    shutil.rmtree(run_dir, ignore_errors=True)
