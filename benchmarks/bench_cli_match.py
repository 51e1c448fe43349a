"""``diagnose match -`` on one pasted traceback, as a whole process, beside a bare Python start.

Run: ``.venv/bin/python benchmarks/bench_cli_match.py [--rounds 20] [--paste FILE]``

A paste should be answered about as fast as ``grep`` would: what counts is the whole process
(interpreter start, imports, the dataset's record index, the match, the output), so this runs
the real command in a fresh process each time, with the full shipped dataset, and beside it a
bare interpreter that imports what any small CLI does (argparse, json, re, pathlib). The two
alternate, round after round, so both see the same load on a shared machine; the medians and
their ratio are printed (a ratio, not a pass/fail). The first, untimed, round warms the
record index cache, as any earlier ``diagnose match`` would have.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PASTE = """\
Traceback (most recent call last):
  File "/home/user/train.py", line 42, in <module>
    scaler.step(optimizer)
  File "/usr/lib/python3.11/site-packages/torch/amp/grad_scaler.py", line 451, in step
    self.unscale_(optimizer)
  File "/usr/lib/python3.11/site-packages/torch/amp/grad_scaler.py", line 338, in unscale_
    raise RuntimeError(
RuntimeError: unscale_() has already been called on this optimizer since the last update().
"""

# Both run as Python runs for users: with compiled bytecode cached (pip installs it). A shell
# that sets PYTHONDONTWRITEBYTECODE would have every module compiled from source each time.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
BARE = [sys.executable, "-c", "import argparse, json, re, pathlib"]
MATCH = [sys.executable, "-m", "diagnose", "match", "-"]


def timed(cmd: list[str], stdin: bytes) -> float:
    started = time.perf_counter()
    subprocess.run(
        cmd, env=ENV, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--paste", type=Path, help="a traceback or log to paste (default: one inside)")
    ap.add_argument(
        "--no-bytecode",
        action="store_true",
        help="both with PYTHONDONTWRITEBYTECODE=1 (every module compiled from source each run)",
    )
    opts = ap.parse_args()
    if opts.no_bytecode:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    paste = opts.paste.read_bytes() if opts.paste else PASTE.encode()
    done = subprocess.run(MATCH, input=paste, capture_output=True, check=False, env=ENV)
    print(f"answer (exit {done.returncode}): {done.stdout.decode().splitlines()[:1]}")
    bare: list[float] = []
    match: list[float] = []
    for _ in range(opts.rounds):
        bare.append(timed(BARE, b""))
        match.append(timed(MATCH, paste))
    b, m = statistics.median(bare), statistics.median(match)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    print(
        f"bytecode cache: {'off' if opts.no_bytecode else 'on'}; {opts.rounds} rounds, alternating"
    )
    print(f"bare python -c 'import argparse, json, re, pathlib': median {b * 1000:.1f} ms")
    print(f"diagnose match - (one paste, whole process):       median {m * 1000:.1f} ms")
    print(f"ratio: {m / b:.2f}x a bare start")


if __name__ == "__main__":
    main()
