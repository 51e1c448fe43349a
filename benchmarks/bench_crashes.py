"""Crashing scripts explained from the live run: a held-out set, apart from the gallery.

Run: ``.venv/bin/python benchmarks/bench_crashes.py [--patched] [NAME ...]``

Each script in ``benchmarks/crashes/`` raises one known exception. Its first line declares the
family and the fix expected (``# expect: shape-mismatch fix-layer-size``); the line the fix
belongs on (the constructor to resize, the in-place op, the carried state, the cut, where the
tensor is made or passed) ends with ``# cause``. Each runs once under the real CLI
(``diagnose --format json``, a subprocess). Printed per script and in total:
- family: the crash family the run found (``event.crash.family``) is the declared one;
- line: the ``# cause`` line is among the lines the explanation points at (its sites, its
  edit, the crash line);
- fix top-1: the first fix is the declared one;
- patch: a patch was offered; with ``--patched`` the patch is applied to a copy and the copy
  run with Python: "runs" counts the patched scripts that then exit 0;
- fallback: the families whose cause the run did not show (the matched record answers them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "crashes"


def _expected(script: Path) -> tuple[str, str, int | None]:
    lines = script.read_text().splitlines()
    family, fix = lines[0].removeprefix("# expect:").split()
    cause = next((i for i, text in enumerate(lines, 1) if text.rstrip().endswith("# cause")), None)
    return family, fix, cause


def _diagnose(script: Path, workdir: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "diagnose", "--format", "json", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=workdir,
    )
    return json.loads(done.stdout) if done.stdout.strip() else {}


def _patched_runs(script: Path, patch: str, workdir: Path) -> bool:
    copy = workdir / script.name
    copy.write_text(script.read_text())
    applied = subprocess.run(
        ["patch", "-s", "-p1", str(copy)], input=patch, capture_output=True, text=True
    )
    if applied.returncode != 0:
        return False
    done = subprocess.run(
        [sys.executable, str(copy)], capture_output=True, text=True, timeout=300, cwd=workdir
    )
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these scripts (file stems)")
    parser.add_argument("--patched", action="store_true", help="apply each patch and rerun")
    args = parser.parse_args(argv)
    scripts = sorted(CASES.glob("*.py"))
    if args.names:
        scripts = [s for s in scripts if s.stem in args.names]
    totals = {"family": 0, "line": 0, "fix": 0, "patch": 0, "runs": 0}
    fallback: dict[str, int] = {}
    started = time.perf_counter()
    print(f"{'script':32} family line fix  patch{'  runs' if args.patched else ''}")
    for script in scripts:
        family, fix, cause = _expected(script)
        with tempfile.TemporaryDirectory() as tmp:
            report = _diagnose(script, Path(tmp))
            event = report.get("event") or {}
            crash = event.get("crash") or {}
            lines = {site["line"] for site in crash.get("sites", [])}
            if crash.get("edit"):
                lines.add(crash["edit"]["line"])
            if event.get("location"):
                lines.add(event["location"]["line"])
            fixes = report.get("fixes") or []
            first = fixes[0] if fixes else {}
            marks = {
                "family": crash.get("family") == family,
                "line": cause in lines,
                "fix": first.get("id") == fix,
                "patch": bool(first.get("patch")) and first.get("id") == fix,
            }
            if args.patched:
                marks["runs"] = marks["patch"] and _patched_runs(script, first["patch"], Path(tmp))
        for key, ok in marks.items():
            totals[key] += ok
        if not marks["fix"]:
            fallback[family] = fallback.get(family, 0) + 1
        cells = " ".join(f"{'yes' if marks[k] else '-':5}" for k in marks)
        print(f"{script.stem:32} {cells}")
    n = len(scripts) or 1
    print(f"\n{len(scripts)} scripts in {time.perf_counter() - started:.0f} s")
    for key in ("family", "line", "fix") + (("patch", "runs") if args.patched else ("patch",)):
        print(f"  {key:7} {100 * totals[key] / n:5.1f} %  ({totals[key]}/{len(scripts)})")
    if fallback:
        print("  fell back to the matched record (no fix from the run):")
        for family, count in sorted(fallback.items()):
            print(f"    {family}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
