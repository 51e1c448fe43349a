"""List the diagnosis rules, or run the test cases of a folder of rules.

diagnose rules list [--rules PATH] [--format text|json]
diagnose rules test [PATH]        (default: the built-in rules)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from diagnose.errors import ExitStatus, UsageError
from diagnose.render.bounded import clip
from diagnose.safetext import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION")
    listing = sub.add_parser("list", help="show the rules: id, family, title, fixes")
    listing.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="PATH",
        help="also load the rules in this file or folder (repeatable); same id overrides",
    )
    listing.add_argument("--format", choices=("text", "json"), default="text")
    testing = sub.add_parser("test", help="run the test cases of the rules in a folder")
    testing.add_argument(
        "path",
        nargs="?",
        default=None,
        metavar="PATH",
        help="rule file or folder (default: the built-in rules)",
    )
    parser.set_defaults(_rules_parser=parser)


def main(args: argparse.Namespace) -> int:
    if args.rules_command == "list":
        return _list(args)
    if args.rules_command == "test":
        return _test(args)
    args._rules_parser.print_help(sys.stderr)
    return ExitStatus.USAGE


def _existing(path: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such rule file or folder")
    return p


def _list(args: argparse.Namespace) -> int:
    from diagnose.engine import load_rules

    rules, problems = load_rules(*[_existing(p) for p in args.rules])
    if args.format == "json":
        payload = {
            "rules": [
                {
                    "id": r.id,
                    "family": r.family,
                    "title": r.title,
                    "symptom": r.symptom,
                    "fixes": [{"id": f, "weight": w} for f, w in r.fixes],
                    "builtin": r.builtin,
                    "path": r.path,
                }
                for r in rules
            ],
            "problems": [{"file": p.file, "line": p.line, "reason": p.reason} for p in problems],
        }
        print(json.dumps(payload, indent=2))
    else:
        width = max((len(r.id) for r in rules), default=2)
        family_width = max((len(r.family) for r in rules), default=6)
        for r in rules:
            fixes = one_line(", ".join(f"{f} ({w:g})" for f, w in r.fixes))
            mark = "" if r.builtin else "  [user]"
            title = clip(one_line(r.title), f"the full title is in {one_line(r.path)}", 400)
            print(f"{one_line(r.id):<{width}}  {one_line(r.family):<{family_width}}  {title}{mark}")
            print(f"{'':<{width}}  {'':<{family_width}}  fixes: {fixes}")
    for problem in problems:
        print(f"diagnose: {one_line(problem)}", file=sys.stderr)
    return ExitStatus.DIAGNOSED if problems else ExitStatus.CLEAN


def _test(args: argparse.Namespace) -> int:
    from diagnose.engine import load_rules, run_cases
    from diagnose.paths import rules_dir

    path = _existing(args.path) if args.path else rules_dir()
    rules, problems = load_rules(path, builtin=False)
    count, failures = run_cases(rules)
    for problem in problems:
        print(one_line(problem))
    for failure in failures:
        print(one_line(failure))
    bad = len(problems) + len(failures)
    verdict = "ok" if not bad else "FAILED"
    print(
        f"{verdict}: {len(rules)} rules, {count} cases, {len(failures)} failing cases, "
        f"{len(problems)} broken files ({one_line(path)})"
    )
    return ExitStatus.DIAGNOSED if bad else ExitStatus.CLEAN
