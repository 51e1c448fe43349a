"""``--format json``: stdout holds the report's JSON and nothing else, whatever the script
writes there (prints, raw writes to file descriptor 1, its subprocesses' output, a hard
exit); all of that reaches stderr, in the order written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

NOISY = textwrap.dedent("""
    import os, subprocess, sys
    import torch

    print("printed")
    os.write(1, b"raw fd 1\\n")
    subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
    sys.stdout.write("unflushed")
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.ones(4, 2)).pow(2).mean().backward()
        optimizer.step()
    if sys.argv[1:] == ["hard-exit"]:
        os._exit(0)
""")


@pytest.mark.parametrize("how", ["ends", "hard-exit"])
def test_json_stdout_is_the_report_alone_and_the_script_output_goes_to_stderr(tmp_path, how):
    (tmp_path / "train.py").write_text(NOISY)
    done = subprocess.run(
        [sys.executable, "-m", "diagnose", "--format", "json", "train.py", how],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "clean"
    for line in ("printed", "raw fd 1", "from a child", "unflushed"):
        assert line in done.stderr
    assert done.stderr.index("printed") < done.stderr.index("raw fd 1")
