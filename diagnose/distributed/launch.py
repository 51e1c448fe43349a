"""``diagnose --nproc N train.py``: launch N ranks with torchrun's own launcher, combine.

The launcher runs in this process (``torch.distributed.run``, standalone rendezvous on a
free port), and so does a TCPStore server of its own: each rank runs ``python -m diagnose``
and publishes its evidence there. After the launch returns — cleanly or with torchrun's
ChildFailedError — this process combines the evidence into one report, so even a rank killed
outright is listed. A launch stopped by Ctrl-C or SIGTERM (torchrun passes the signal to the
ranks, which publish what they saw) is combined the same way and reported as interrupted.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.distributed.context import AGGREGATOR_ENV
from diagnose.distributed.store import RUN_ID_ENV, STORE_ENV, namespace
from diagnose.report import Event, Report, ScriptInfo


def launch(
    script: str | Path, argv: Sequence[str], nproc: int, options: Any, rank_args: Sequence[str] = ()
) -> Report:
    """Run ``script`` on ``nproc`` local ranks and return the analysed combined report."""
    from torch.distributed import PrefixStore, TCPStore

    from diagnose.distributed.combine import combine
    from diagnose.distributed.evidence import read_all
    from diagnose.runner import check_script, enrich, mark_interrupted

    check_script(script)
    server = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    run_id = uuid.uuid4().hex
    settings = {STORE_ENV: f"127.0.0.1:{server.port}", RUN_ID_ENV: run_id, AGGREGATOR_ENV: "parent"}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        failure, stopped = _torchrun(
            [
                "--standalone",
                "--nproc_per_node",
                str(nproc),
                "-m",
                "diagnose",
                *rank_args,
                str(script),
                *argv,
            ]
        )
        store = PrefixStore(namespace({RUN_ID_ENV: run_id}), server)
        evidence = read_all(store, nproc)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if not evidence:
        why = failure or "the launch ended without any"
        report = Report(
            status="exception",
            script=ScriptInfo(path=str(script), argv=list(argv)),
            event=Event(
                kind="exception",
                exception_type="LaunchError",
                message=f"no rank wrote its evidence ({why}); see the ranks' output above",
            ),
        )
    else:
        report = combine(evidence, nproc)
    if stopped is not None:
        if not any(d.get("status") in ("nonfinite", "exception") for d in evidence.values()):
            report.status, report.event = "clean", None  # ranks stopped by the signal only
        steps = [d.get("step") for d in evidence.values() if isinstance(d.get("step"), int)]
        mark_interrupted(report, stopped, max(steps, default=0))
    return enrich(report, script, options)


def _torchrun(argv: list[str]) -> tuple[str | None, str | None]:
    """Run torchrun's launcher in this process: the failure summary (None when clean), and
    the signal that stopped the launch (None when none did)."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    try:
        torchrun.run(torchrun.parse_args(argv))
    except ChildFailedError as exc:
        ranks = sorted(exc.failures)
        return f"torchrun: rank(s) {', '.join(map(str, ranks))} failed", None
    except SignalException as exc:  # torchrun's own handler, after it stopped the ranks
        name = getattr(exc.sigval, "name", str(exc.sigval))
        return f"torchrun: stopped by {name}", name if name in ("SIGTERM", "SIGHUP") else "SIGINT"
    except KeyboardInterrupt:
        return "torchrun: stopped by SIGINT", "SIGINT"
    return None, None
