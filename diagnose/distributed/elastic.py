"""What torchrun says about a rank that diagnose ends with a diagnosis.

Under ``torchrun ... -m diagnose train.py`` each rank is a worker of torchrun's agent, and a
diagnosed problem is exit status 1 (the command line's contract, which a CI job relies on).
torchrun answers every rank that exits non-zero with its ``ChildFailedError`` report: a
Python traceback of its own launcher and a table whose root cause is read from the error file
torchrun names in the rank's ``TORCHELASTIC_ERROR_FILE``. With no such file the table says
``error_file: <N/A>`` and ``To enable traceback see ...``, which reads as if diagnose itself
had crashed. The table is torchrun's and stays (any way around it would be an exit status
that hides the problem); what the rank can do honestly is fill the error file in torchrun's
own format, so that the root cause names the diagnosis, says it is not a crash of diagnose,
and says where the report is.

An error file that is already there (the script's own ``@record`` wrote its exception) is
the script's word on its failure and is left as it is.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from diagnose.safetext import one_line

ERROR_FILE_ENV = "TORCHELASTIC_ERROR_FILE"


def record_diagnosis(
    rank: int | None, report: Any, report_path: Path | None, combined_by: int | None = None
) -> Path | None:
    """Write the rank's error file for torchrun; the path written, or None (not under
    torchrun, a file already there, or one that cannot be written). ``rank`` None: the
    launcher's ``RANK`` (a launch of one process runs diagnose as a single process)."""
    target = os.environ.get(ERROR_FILE_ENV)
    if not target:
        return None
    if rank is None:
        try:
            rank = int(os.environ.get("RANK", "0"))
        except ValueError:
            rank = 0
    path = Path(target)
    lines = diagnosis_lines(rank, report, report_path, combined_by)
    data = {
        "message": {
            "message": lines[0],
            "extraInfo": {"py_callstack": "\n".join(lines), "timestamp": str(int(time.time()))},
        }
    }
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # never over another's
    except OSError:
        return None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def diagnosis_lines(
    rank: int, report: Any, report_path: Path | None, combined_by: int | None = None
) -> list[str]:
    """The error file's text: what was diagnosed, the likely cause, where the report is."""
    lines = [
        f"diagnose diagnosed a problem on rank {rank} (exit status 1; not a crash of "
        f"diagnose): {_what(report)}"
    ]
    symptoms = getattr(report, "symptoms", None) or []
    fixes = getattr(report, "fixes", None) or []
    if symptoms:
        top = symptoms[0]
        cause = f"likely cause: {one_line(top.title or top.id)} ({top.confidence:.2f})"
        if fixes:
            cause += f"; first fix: {one_line(fixes[0].id)}"
        lines.append(cause)
    if combined_by is not None and combined_by != rank:
        lines.append(f"the report of all ranks comes from rank {combined_by}")
    elif report_path is not None:
        lines.append(f"report: {one_line(report_path)}")
    else:
        lines.append("the report is shown above")
    return lines


def _what(report: Any) -> str:
    event = getattr(report, "event", None)
    status = getattr(report, "status", None)
    if event is not None and event.kind == "nonfinite":
        where = [f"step {event.step}" if event.step is not None else None, event.phase]
        if event.module:
            kind = f" ({event.module_type})" if event.module_type else ""
            where.append(f"in {event.module}{kind}")
        if event.op:
            where.append(f"op {event.op}")
        if event.rank is not None:
            where.append(f"born on rank {event.rank}")
        return one_line("first non-finite value: " + ", ".join(w for w in where if w))
    if event is not None:
        first = (event.message or "").strip().splitlines()
        return one_line(f"the script raised: {first[0] if first else 'an exception'}")
    if status == "silent" and getattr(report, "symptoms", None):
        return one_line(f"the run stayed finite but {report.symptoms[0].title or 'cannot learn'}")
    return one_line(f"status {status}")
