"""``python -m benchmarks.corpus``: generate a seeded sample, run it, print the scores.

python -m benchmarks.corpus --seed 1 --sample 80 -j 1
python -m benchmarks.corpus --seed 1 --sample 20 --family lr-too-high
python -m benchmarks.corpus --case 1:17 --keep /tmp/case    # write one case out (and run it)
python -m benchmarks.corpus --list                          # operators and their bases
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.corpus.generate import Case, applicable, family_of, make_case, sample
from benchmarks.corpus.operators import all_operators
from benchmarks.corpus.runner import TIMEOUT_S, run_case, write_case
from benchmarks.corpus.score import judge, table, why
from benchmarks.corpus.witness import plain_run


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.corpus", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    parser.add_argument(
        "--sample", type=int, default=20, metavar="N", help="cases to run (default 20)"
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="J", help="cases run at once")
    parser.add_argument(
        "--family", help="only cases of this family (a symptom id, 'healthy' or an operator name)"
    )
    parser.add_argument("--case", metavar="SEED:INDEX", help="one case by its name")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="keep each case's script, truth and report under DIR",
    )
    parser.add_argument(
        "--no-run", action="store_true", help="write the cases (with --keep) without running them"
    )
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per case")
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="also write every verdict as JSON"
    )
    parser.add_argument(
        "--witness",
        action="store_true",
        help="run each wrong case's script plainly too and say what it does without the tool",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the operators and the bases each applies to"
    )
    args = parser.parse_args(argv)
    if args.sample < 1 or args.jobs < 1 or args.timeout <= 0:
        parser.error("--sample, -j and --timeout must be positive")
    return args


def witness_of(case: Case, timeout: float) -> str:
    with tempfile.TemporaryDirectory(prefix="corpus-plain-") as folder:
        return plain_run(write_case(case, Path(folder)), timeout)


def chosen_cases(args: argparse.Namespace) -> list[Case] | str:
    """The cases asked for, or the one line that says why there are none."""
    if args.case:
        seed, _, index = args.case.partition(":")
        if not (seed.lstrip("-").isdigit() and index.isdigit()):
            return f"--case {args.case!r}: expected SEED:INDEX, e.g. 1:17"
        return [make_case(int(seed), int(index))]
    families = {family_of(op) for op in all_operators().values()} | set(all_operators())
    if args.family is not None and args.family not in families:
        return f"--family {args.family!r}: no operator of that family (see --list)"
    return sample(args.seed, args.sample, args.family)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, op in sorted(all_operators().items()):
            print(f"{name:28s} {op.family or 'healthy':32s} {' '.join(applicable(name))}")
        return 0
    cases = chosen_cases(args)
    if isinstance(cases, str):
        print(cases, file=sys.stderr)
        return 2
    if args.no_run:
        if args.keep is None:
            print("--no-run writes the cases: give --keep DIR", file=sys.stderr)
            return 2
        for case in cases:
            write_case(case, args.keep / case.name.replace(":", "_"))
        print(f"{len(cases)} case(s) written under {args.keep}")
        return 0

    def run(case):
        keep = args.keep / case.name.replace(":", "_") if args.keep else None
        verdict = judge(case, run_case(case, keep, args.timeout))
        mark = "ok " if verdict.right else "BAD"
        print(
            f"{mark} {case.name:>8s} {case.base:22s} {case.truth.operator:28s} {verdict.outcome.seconds:5.1f}s",
            flush=True,
        )
        return verdict

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        verdicts = list(pool.map(run, cases))
    print()
    print(table(verdicts))
    wrong = [v for v in verdicts if not v.right]
    if wrong:
        print(f"\nwrong ({len(wrong)}): regenerate with --case SEED:INDEX --keep DIR")
        for v in wrong:
            print(f"  {v.case.name:>8s} {v.case.base}+{v.case.truth.operator}: {why(v)}")
            if args.witness:
                print(f"           {witness_of(v.case, args.timeout)}", flush=True)
    if args.json:
        rows = [
            {
                "case": v.case.name,
                "base": v.case.base,
                "truth": v.case.truth.to_json(),
                "outcome": v.outcome.__dict__,
                "top1": v.top1,
                "top3": v.top3,
                "producer": v.producer,
                "clean": v.clean,
            }
            for v in verdicts
        ]
        args.json.write_text(json.dumps(rows, indent=2, default=list) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
