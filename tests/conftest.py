"""Shared fixtures: paths into the checkout and a helper to run the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The upstream sample record, copied into the project (see tests/fixtures/upstream/README.md);
# the upstream file itself, when a checkout has it beside, is only compared with the copy.
SEED = ROOT / "tests" / "fixtures" / "upstream" / "000_27c7b1b258d2bb16.txt"
UPSTREAM_SEED = ROOT.parent / "shared" / "seed" / SEED.name


@pytest.fixture
def root() -> Path:
    return ROOT


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 300):
    """Run ``python -m diagnose ARGS`` as a user would, without a terminal."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "diagnose", *args],
        cwd=cwd or ROOT,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
