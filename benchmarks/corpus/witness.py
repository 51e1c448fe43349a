"""What a case's script does on its own, without the tool: the evidence that its fault is real.

A wrong verdict is either the tool's miss or an operator whose fault did not happen on that
base. Running the script plainly and reading its exit status, its last error line and the
losses it prints tells the two apart at a glance.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

# "loss 0.52", "loss=0.5", "'loss': '0.52'" (a transformers log line), "d 0.3 g 0.7" is not one
LOSS = re.compile(r"\b(?:loss|d|g)['\"]?\s*[:=]?\s*['\"]?([-+]?(?:\d[\d.eE+-]*|nan|inf))\b", re.I)


def plain_run(script: Path, timeout: float) -> str:
    """One line: the plain run's exit status, its error if it raised, its first and last loss."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    try:
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=script.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"plain run timed out after {timeout:g}s"
    losses = [m.group(1) for m in LOSS.finditer(done.stdout)]
    said = f"plain run: exit {done.returncode}"
    if done.returncode != 0:
        error = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or [""]
        said += f" ({error[0].strip()[:120]})"
    if losses:
        bad = next((x for x in losses if x.lower().lstrip("+-") in {"nan", "inf"}), None)
        said += f", loss {losses[0]} -> {losses[-1]}" + (
            f" (first non-finite: {bad})" if bad else ""
        )
    else:
        said += ", no loss printed"
    return said
