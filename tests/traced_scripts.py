"""Run a training script under a Tracer as ``diagnose`` would (its own ``sys.argv`` and
``__main__``), for the end-to-end tests on CPU and on CUDA."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any

from diagnose.report import Report
from diagnose.tracer import NonFiniteDetected, Tracer


def trace_script(path: Path) -> tuple[Report, NonFiniteDetected | None]:
    """The report of one run of ``path``, and the exception that stopped it, if any."""
    saved, sys.argv = sys.argv[:], [str(path)]
    tracer, caught = Tracer(), None
    try:
        with tracer:
            runpy.run_path(str(path), run_name="__main__")
    except NonFiniteDetected as exc:
        caught = exc
    finally:
        sys.argv = saved
    return tracer.report(), caught


def line_of(path: Path, text: str) -> int:
    """The number of the first line of ``path`` that contains ``text``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def debug_underflow_overflow_module(path: Path, capsys: Any) -> tuple[str, str]:
    """The module transformers' DebugUnderflowOverflow names first, as (name, class), on one
    forward of the model ``build()`` in ``path`` makes (``capsys``: pytest's fixture)."""
    import pytest
    from transformers.debug_utils import DebugUnderflowOverflow

    model, input_ids, labels = runpy.run_path(str(path), run_name="build")["build"]()
    capsys.readouterr()
    DebugUnderflowOverflow(model)
    with pytest.raises(ValueError, match="inf/nan detected"):
        model(input_ids=input_ids, labels=labels)
    headers = [
        line.split()
        for line in capsys.readouterr().out.splitlines()
        if line.startswith(" " * 17) and len(line.split()) == 2
    ]
    name, cls = headers[-1]
    return name, cls
