"""A signal that ends the process during an atomic write ends it after the write: the target
holds the old or the new content in full, and no temporary file is left beside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

# The signal arrives while the temporary file is being synced, half-way through the write.
WRITER = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from diagnose import atomic

    real_fsync = os.fsync

    def fsync(fd):
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        real_fsync(fd)

    os.fsync = fsync
    atomic.write_atomic(Path(sys.argv[1]), "new " * 100_000)
    print("went on", flush=True)
""")


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_write_ends_the_process_after_the_new_file_is_in_place(tmp_path, name):
    target = tmp_path / "report.json"
    target.write_text("old")
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(target), name],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == -getattr(signal, name), done.stderr  # ended by it, as it would be
    assert "went on" not in done.stdout
    assert target.read_text() == "new " * 100_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_signal_with_a_handler_of_its_own_is_left_to_that_handler(tmp_path):
    target = tmp_path / "report.json"
    handled = "import signal; signal.signal(signal.SIGTERM, lambda *a: print('handled'))\n"
    done = subprocess.run(
        [sys.executable, "-c", handled + WRITER, str(target), "SIGTERM"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "handled" and done.stdout.split()[-2:] == ["went", "on"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
