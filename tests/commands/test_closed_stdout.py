"""A reader that goes away (`diagnose ... | head`) ends diagnose quietly, in every command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize(
    "args",
    [
        ["match", "--format", "json", "RuntimeError: CUDA error: device-side assert triggered"],
        ["match", "zebra giraffe quokka"],
        ["rules", "list"],
        ["dataset", "validate", "dataset/records"],
    ],
    ids=["match-json", "match-no-record", "rules-list", "dataset-validate"],
)
def test_output_to_a_closed_pipe_ends_without_traceback_or_internal_error(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails
    try:
        out = subprocess.run(
            [sys.executable, "-m", "diagnose", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(write_end)
    assert out.returncode == 141
    assert out.stderr == ""
