"""Load+validate time of the error-record loader for 1k, 10k and 100k synthetic records.

Records are shaped like real ones: every schemaVersion 2 field, a message with variable parts
and a pattern with holes (``\\d+``, ``(\\w+)``, ``[^']+``), a 6-line source snippet, four
solutions, an example fix (~2 KB of JSON each; the upstream sample with its 37-line snippet is
5 KB). Each size is written as one JSON Lines file and as a folder of JSON array files (100
records each), in a temporary folder, and left alone for ``RACY_NS`` so it is as old as a real
dataset file (a file changed less than 2 s before it is read costs one extra SHA-256 pass, 0.15 s
per 200 MB, on the cold load and the first warm one; see ``diagnose/records/cache.py``).

Columns: ``1 proc, new``: a cold load in a new process (imports not timed) with the worker
processes turned off, side by side with ``cold new proc``: the same as a user meets it (workers
on for inputs above ``parallel.MIN_BYTES``). ``idle``: that load's critical path, its own CPU
time plus the CPU time of the busiest worker of each round (read with ``wait4``): its wall time
on two otherwise idle cores. ``cold``: an empty cache folder, in this process (which holds the
generated records). ``warm``: the same load again (best of 3), served by the cache. ``+ids``:
on the warm result, ``len(records)`` plus the hot columns an index over all records needs
(``id``, ``slug``, ``messagePattern``, ``errorMessage``, ``errorClass`` via
``records.column``). ``build all``: turning every warm record into a model
(``list(records)``), which a warm load itself never does. Each time is wall clock with the CPU
time beside it (this process's and its workers'): on a machine shared with other jobs the CPU
time is what the load costs, the wall time what this run happened to wait. ``load``: the
1-minute load average after the row.
Targets: 100k records under 3 s cold and under 0.3 s warm.

Measured (3 runs, 2 cores, while another job kept one core busy: load average 1.7-2.2, most of
it that job; seconds wall (CPU), ranges over the runs):

    records  layout      1 proc, new          cold new proc        idle        warm
    1k       JSONL       0.024-0.030          0.024-0.031          serial      0.001
    1k       10 files    0.026-0.030          0.026-0.030          serial      0.001
    10k      JSONL       0.25-0.36            0.28-0.31 (0.29-0.38)  0.16-0.21  0.004-0.005
    10k      100 files   0.23-0.30            0.24-0.33            0.14-0.19   0.011-0.014
    100k     JSONL       3.08-3.76 (3.1-3.7)  2.16-2.89 (2.9-3.6)  1.59-2.29   0.063-0.068
    100k     1000 files  2.71-3.18 (2.7-3.2)  1.79-3.43 (2.8-3.5)  1.58-1.91   0.115-0.149

In-process ``cold`` for 100k: JSONL 1.75-4.55 s, 1000 files 1.92-2.75 s. While the other job
holds a whole core, the two workers share the other one and the wall time is the CPU time; in
the rows where both workers did run at once (wall well below CPU), 100k records loaded cold in
a new process in 1.79-2.30 s against 3.08-3.76 s serially in the same runs. Judge by ``idle``
and the CPU columns: the workers' CPU in all is about the serial load's.

Why this design (measured here, 2 cores, 100k records of 2 KB; side by side with the previous
serial loader in one run at load average 2.8: one JSONL file cold 6.19 -> 2.56 s, warm 0.52 ->
0.072 s; 1000 JSON files cold 3.83 -> 2.81 s, warm 0.64 -> 0.128 s; CPU seconds below):

* Both cores, for big cold inputs (``diagnose/records/parallel.py``, ``split.py``, ``forked.py``).
  Validation is pydantic and Python work under the GIL, so only a second process can use the
  second core: workers are forked (no imports, the bytes shared copy-on-write), one per usable
  CPU, each validating a piece of whole lines of a big JSON Lines file or a group of a folder's
  uncached files, and each writes what it validated in the cache's own lazily decoded format.
  The parent then opens those entries as a warm load does (0.06-0.15 s for 100k records), so it
  never builds or receives 100k models (sending the models back would cost what building them
  costs). A big file still gets one entry: the workers append their parts to one new file with
  ``O_APPEND`` and the parent adds the header; joining per-worker files afterwards instead
  (``copy_file_range``) cost 0.07-0.19 s more on the critical path. A worker's CPU for 50k
  records: validation 0.8 s, encoding 0.2 s, page faults 0.25 s of it; having each worker
  validate and write 8 MB at a time cut its peak memory from 631 to 265 MB but not its time
  (1.08-1.20 s against 1.13-1.21 s), so it was left out. With the cache off
  (``DIAGNOSE_CACHE_DIR=off``) the workers still encode entries, into a private temporary
  folder: ~0.4 s of CPU for 100k records that a serial load then skips. Threshold ``MIN_BYTES`` = 16 MiB: at
  load 2.3, 4k records (7.8 MB) took 102 ms serially and 122 ms with workers, 8k (15.6 MB)
  205 and 188 ms, 16k (31 MB) 589 and 328 ms.
* Cold, in each process. Validation is one pydantic call per document or per JSON Lines line
  on the raw bytes (Rust JSON parser and validators; no ``json.loads`` pass, no decoding).
  Parsing 196 MB into plain dicts alone costs 0.9 s (``TypeAdapter(dict)``; ``json.loads``
  1.2 s): that is the floor, and validating into the models now costs 1.36 s. On the way
  there: the Python callable that told wrapper from bare record cost 0.4-0.8 s and is gone
  (the adapter is picked from the bytes; a wrong guess only takes the slow path); the
  per-field Python validators (integral floats, unique tags, line order, pattern compiles)
  became one model validator plus a union branch that only floats reach (-0.35 s);
  ``messagePattern`` is matched against the compiles-safely recogniser by pydantic's Rust
  regex engine, with ``re`` only outside it (-0.23 s; a property test keeps both recognisers
  identical). Per-line validation costs the same as one joined array (1.66 vs 1.80 s) and
  cannot glue two broken lines into one valid record; lines are cut one at a time (splitting
  all 100k at once kept 200 MB more alive and cost ~5% more, in page faults). Resuming the GC
  used to walk all new records at once (0.4 s); they now go straight to the oldest generation
  (``loader._no_gc``).
  Storing the cache: 0.3-0.45 s (model field dicts, marshal in blocks of 64: one marshal of
  everything is 2x slower, pickle 5x). With many small files each entry's file creation adds
  0.3-0.4 ms (ext4), 0.3-0.4 s for 1000 files.
* Warm, 0.52 s -> 0.06 s. Unmarshalling every record (0.35 s) or unpickling models (0.66 s)
  cannot meet 0.3 s, so nothing per record is decoded: the entry's header (the problems) and
  five hot columns are; the rest is memory-mapped and decoded 64 records at a time on first
  read. Building all 100k models from the cache then costs 0.75 s (iteration builds ahead in
  doubling chunks with the GC paused; block by block with the GC running it was 1.3 s): a
  caller that iterates every record pays that, ``records.column(...)`` does not.
* Rejected: orjson / msgspec (not installed; the floor above is object creation, which a
  faster parser does not remove, and the models must stay pydantic); one cache entry for a
  whole folder (per-file entries keep a one-file edit cheap); BLAKE2 for racy files (SHA-256
  with SHA-NI is 2.3x faster here); pydantic's string cache (no gain on distinct values).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from diagnose.records import LoadResult, load_records
from diagnose.records.cache import RACY_NS
from diagnose.records.recordlist import HOT_FIELDS

OPS = ["Log", "Div", "Sqrt", "Pow", "Exp", "Addmm", "Mm", "Softmax", "LayerNorm", "Mul"]


def make_record(i: int) -> dict:
    op = OPS[i % len(OPS)]
    return {
        "id": f"{i:016x}",
        "repo": "pytorch/pytorch",
        "slug": f"synthetic-{op.lower()}-failure-{i}",
        "errorCode": None,
        "errorMessage": f"Function '{op}Backward{i % 3}' returned nan values in its {i % 4}th "
        f"output while running kernel k{i} on tensor of shape [{i % 64}, 128].",
        "messagePattern": f"Function '(\\w+)Backward\\d*' returned nan values in its \\d+th "
        f"output while running kernel k{i} on tensor of shape \\[[^\\]]+\\]\\.",
        "errorType": "exception",
        "errorClass": "RuntimeError",
        "httpStatus": None,
        "severity": "error",
        "filePath": "torch/csrc/autograd/python_anomaly_mode.cpp",
        "lineNumber": 100 + i % 50,
        "sourceCode": "\n".join(
            f"    line_{k} = check_{op.lower()}(grad_{k}, {i})" for k in range(6)
        ),
        "sourceCodeStart": 100,
        "sourceCodeEnd": 160,
        "githubUrl": f"https://github.com/pytorch/pytorch/blob/{i:040x}/torch/x.cpp#L100-L160",
        "documentation": f"Anomaly mode found a nan produced by {op}Backward during backward.",
        "triggerScenarios": f"{op} of a value outside its domain, e.g. log(0) or sqrt(-1).",
        "commonSituations": "Custom losses with log/div/sqrt; fp16 overflow in attention.",
        "solutions": [
            f"Clamp the input of {op.lower()} to its valid domain with an eps.",
            "Lower the learning rate or add warmup.",
            "Enable gradient clipping with max_norm=1.0.",
            "Use bf16 instead of fp16 where the hardware supports it.",
        ],
        "exampleFix": f"# before\ny = torch.{op.lower()}(x)\n# after\ny = torch.{op.lower()}(x.clamp_min(1e-6))",
        "handlingStrategy": "fail-fast",
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": ["Check inputs for nan before the forward pass."],
        "tags": ["autograd", "nan", op.lower()],
        "backgroundTag": None,
        "analyzedSha": f"{i:040x}",
        "analyzedAt": "2026-08-14T18:24:08.354Z",
        "schemaVersion": 2,
    }


def write_datasets(base: Path, n: int) -> tuple[Path, Path]:
    lines = [json.dumps({"record": make_record(i), "datasetVersion": None}) for i in range(n)]
    jsonl = base / f"records-{n}.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    folder = base / f"records-{n}"
    folder.mkdir()
    for start in range(0, n, 100):
        chunk = [make_record(i) for i in range(start, min(n, start + 100))]
        (folder / f"part-{start // 100:05d}.json").write_text(json.dumps(chunk))
    return jsonl, folder


def cpu_time() -> float:
    """CPU seconds of this process and of its reaped children (the loader's workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def clock() -> tuple[float, float]:
    return time.perf_counter(), cpu_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clock()
    return wall - start[0], cpu - start[1]


def timed(path: Path) -> tuple[tuple[float, float], LoadResult]:
    start = clock()
    result = load_records(path)
    elapsed = since(start)
    assert result.ok, result.problems[:3]
    return elapsed, result


_FRESH = """
import os, resource, sys, time
sys.path.insert(0, {root!r})
from diagnose.records import forked, load_records, parallel
if {serial!r}:
    parallel.MIN_BYTES = 1 << 62
reaped, rounds = [], []  # CPU seconds of each worker; of the busiest worker of each fork round
def waitpid(pid, options):
    pid, status, usage = os.wait4(pid, options)
    reaped.append(usage.ru_utime + usage.ru_stime)
    return pid, status
os.waitpid = waitpid
close = forked.Forked.close
def closing(self):
    reaped.clear()
    close(self)
    if reaped:
        rounds.append(max(reaped))
forked.Forked.close = closing
def cpu():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
wall, start, mine = time.perf_counter(), cpu(), time.process_time()
result = load_records({path!r})
mine = time.process_time() - mine
print(time.perf_counter() - wall, cpu() - start, mine + sum(rounds), len(result.records))
"""


def cold_in_fresh_process(
    path: Path, cache_dir: Path, serial: bool = False
) -> tuple[float, float, float]:
    """A cold load as a user meets it: a new process (imports not timed), an empty cache;
    ``serial``: with the worker processes turned off, for a side-by-side comparison.

    The in-process ``cold`` column runs in a process that just generated ~200 MB of records,
    whose heap and allocator state slow the load; this is the figure the target is about.
    Returns wall, CPU (with the workers') and the critical path: this process's CPU plus, for
    each round of workers, the CPU of the busiest one (the wall time on otherwise idle cores).
    """
    root = str(Path(__file__).resolve().parent.parent)
    code = _FRESH.format(root=root, path=str(path), serial=serial)
    env = {**os.environ, "DIAGNOSE_CACHE_DIR": str(cache_dir)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert int(out[3]) > 0
    return float(out[0]), float(out[1]), float(out[2])


def fmt(t: tuple[float, ...]) -> str:
    return f"{t[0]:6.3f} ({t[1]:5.2f})"


def main() -> None:
    sizes = [int(s) for s in sys.argv[1:]] or [1_000, 10_000, 100_000]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; seconds wall (CPU)")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(
            f"{'records':>8} {'layout':<16} {'MB':>5} {'1 proc, new':>14} "
            f"{'cold new proc':>14} {'idle':>5} {'cold':>14} "
            f"{'warm':>14} {'+ids':>14} {'build all':>14} {'cold/warm':>9} {'load':>5}"
        )
        for n in sizes:
            jsonl, folder = write_datasets(base, n)
            time.sleep(RACY_NS / 1e9 + 0.1)  # as old as a real dataset file
            for path, layout in ((jsonl, "one JSONL file"), (folder, f"{-(-n // 100)} JSON files")):
                size = (
                    path.stat().st_size
                    if path.is_file()
                    else sum(p.stat().st_size for p in path.iterdir())
                )
                alone = cold_in_fresh_process(path, base / f"cache-alone-{path.name}", True)
                fresh = cold_in_fresh_process(path, base / f"cache-fresh-{path.name}")
                os.environ["DIAGNOSE_CACHE_DIR"] = str(base / f"cache-{path.name}")
                cold, result = timed(path)
                assert len(result.records) == n
                del result
                warm, result = min((timed(path) for _ in range(3)), key=lambda r: r[0][0])
                start = clock()
                assert len(result.records) == n
                for name in HOT_FIELDS:
                    result.records.column(name)
                ids = since(start)
                start = clock()
                assert len(list(result.records)) == n
                build = since(start)
                del result
                print(
                    f"{n:>8} {layout:<16} {size / 1e6:>5.1f} {fmt(alone):>14} {fmt(fresh):>14} "
                    f"{fresh[2]:>5.2f} {fmt(cold):>14} {fmt(warm):>14} "
                    f"{fmt(ids):>14} {fmt(build):>14} {cold[0] / warm[0]:>8.1f}x "
                    f"{os.getloadavg()[0]:>5.1f}",
                    flush=True,
                )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
