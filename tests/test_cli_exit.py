"""How the ``diagnose`` process ends: at once after the report, as a normal exit would.

A real process each (not ``tests.forked``, which ends its children its own way): the
script's non-daemon threads are joined and its ``atexit`` handlers run, the output is all
there, the status is the run's, and the interpreter's module teardown (seconds after a
traced run) is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = """\
import atexit, sys, threading, time, torch

MARK = sys.argv[1]

class Teardown:
    def __del__(self):
        open(MARK + ".teardown", "w").write("ran")

KEEP = Teardown()  # deleted only by the interpreter's module teardown

def later():
    time.sleep(0.3)
    open(MARK + ".thread", "w").write("joined")

threading.Thread(target=later).start()
atexit.register(lambda: open(MARK + ".atexit", "w").write("ran"))
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(2, 3)).pow(2).mean().backward()
opt.step()
print("trained")
sys.exit(3)
"""


def test_the_process_ends_with_the_scripts_exit_work_done_and_no_teardown(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    mark = tmp_path / "mark"
    env = {**os.environ, "NO_COLOR": "1", "DIAGNOSE_REPORT_DIR": str(tmp_path / "reports")}
    done = subprocess.run(
        [sys.executable, "-m", "diagnose", "--format", "text", str(script), str(mark)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stderr
    assert "trained" in done.stdout and "exited with status 3" in done.stdout
    assert done.stderr.rstrip().splitlines()[-1].startswith("diagnose: report kept in ")
    assert (tmp_path / "mark.thread").read_text() == "joined"
    assert (tmp_path / "mark.atexit").read_text() == "ran"
    assert not (tmp_path / "mark.teardown").exists()
