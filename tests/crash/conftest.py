"""Each crash test writes a small real training script and runs it under the tracer."""

from __future__ import annotations

import textwrap

import pytest

from diagnose.runner import diagnose_script


@pytest.fixture
def crash_run(tmp_path):
    def run(source: str):
        script = tmp_path / "train.py"
        script.write_text(textwrap.dedent(source).lstrip("\n"))
        return script, diagnose_script(script)

    return run
