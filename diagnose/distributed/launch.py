"""``diagnose --nproc N train.py``: launch N ranks with torchrun's own launcher, combine.

The launcher runs in this process (``torch.distributed.run``, standalone rendezvous on a
free port), each rank runs ``python -m diagnose`` and writes its evidence into a temporary
run folder; after the launch returns — cleanly or with torchrun's ChildFailedError — this
process combines the evidence into one report, so even a rank killed outright is listed.
A launch stopped by Ctrl-C or SIGTERM (torchrun passes the signal to the ranks, which write
what they saw) is combined the same way and reported as interrupted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diagnose.distributed.context import AGGREGATOR_ENV, RUN_DIR_ENV
from diagnose.report import Event, Report, ScriptInfo


def launch(script: str | Path, argv: Sequence[str], nproc: int, options: Any,
           rank_args: Sequence[str] = ()) -> Report:
    """Run ``script`` on ``nproc`` local ranks and return the analysed combined report."""
    from diagnose.distributed.combine import combine
    from diagnose.distributed.evidence import read_evidence
    from diagnose.runner import check_script, enrich, mark_interrupted

    check_script(script)
    run_dir = Path(tempfile.mkdtemp(prefix="diagnose-run-"))
    saved = {k: os.environ.get(k) for k in (RUN_DIR_ENV, AGGREGATOR_ENV)}
    os.environ[RUN_DIR_ENV] = str(run_dir)
    os.environ[AGGREGATOR_ENV] = "parent"
    try:
        failure, stopped = _torchrun(["--standalone", "--nproc_per_node", str(nproc), "-m",
                                      "diagnose", *rank_args, str(script), *argv])
        evidence = read_evidence(run_dir)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(run_dir, ignore_errors=True)
    if not evidence:
        why = failure or "the launch ended without any"
        report = Report(status="exception", script=ScriptInfo(path=str(script), argv=list(argv)),
                        event=Event(kind="exception", exception_type="LaunchError",
                                    message=f"no rank wrote its evidence ({why}); "
                                            "see the ranks' output above"))
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
        return f"torchrun: stopped by {name}", "SIGTERM" if name == "SIGTERM" else "SIGINT"
    except KeyboardInterrupt:
        return "torchrun: stopped by SIGINT", "SIGINT"
    return None, None
