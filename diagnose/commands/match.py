"""Rank error-dataset records for an error message, or a whole traceback/log on stdin.

`diagnose match "RuntimeError: CUDA out of memory ..."`, `diagnose match train.log` (a single
argument that is an existing file is read), or `python train.py 2>&1 | diagnose match -`.
Exit 0 when a record matches, 1 when none does (near misses are shown apart, as not
matches), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from diagnose.errors import ExitStatus, UsageError
from diagnose.safetext import json_text, one_line, safe


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "message",
        nargs="*",
        metavar="MESSAGE",
        help=(
            "the error message (words are joined), or the path of a file that holds it (a log, "
            "a traceback); '-' or nothing with piped stdin reads stdin"
        ),
    )
    parser.add_argument("--limit", type=_positive, default=5, help="most matches shown (5)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="PATH",
        help="record file or folder added to the built-in dataset (repeatable)",
    )


def main(args: argparse.Namespace) -> int:
    from diagnose.matcher import Matcher
    from diagnose.records import load_records

    text = _read_message(args.message)
    records = _load(args.dataset, load_records)
    matcher = Matcher(records)
    result = matcher.search(text, limit=args.limit, nearest=3)
    if args.format == "json":
        print(json_text(json.dumps(_as_json(result), indent=2, ensure_ascii=False)))
    else:
        # The log, the query and --dataset records are all untrusted: the whole text goes
        # through safe(), which leaves diagnose's own words as they are.
        print(safe(_as_text(result, matcher.cutoff)))
    return ExitStatus.CLEAN if result.matched else ExitStatus.DIAGNOSED


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _read_message(words: list[str]) -> str:
    if len(words) == 1 and words[0] != "-" and Path(words[0]).is_file():
        text = _read_file(Path(words[0]))
    elif words and words != ["-"]:
        text = " ".join(words)
    elif words == ["-"] or not sys.stdin.isatty():
        text = sys.stdin.read()
    else:
        raise UsageError("no error message: pass MESSAGE, or pipe a log into 'diagnose match -'")
    if not text.strip():
        raise UsageError("the error message is empty")
    return text


def _read_file(path: Path) -> str:
    """A log or traceback file; bytes that are not UTF-8 (a progress bar's) are replaced."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    return data.decode("utf-8", errors="replace")


def _load(extra: list[str], load_records: Any) -> list[Any]:
    """Built-in records plus ``--dataset`` files; their problems go to stderr, one a line."""
    for path in extra:
        if not Path(path).exists():
            raise UsageError(f"--dataset {path}: no such file or folder")
    builtin = load_records()
    records = {r.id: r for r in builtin.records}
    problems = list(builtin.problems)
    if extra:
        added = load_records(*extra)
        problems += added.problems
        records.update({r.id: r for r in added.records})  # a user's record wins over ours
    for problem in problems:
        print(f"diagnose: warning: {one_line(problem)}", file=sys.stderr)
    return list(records.values())


def _as_json(result: Any) -> dict[str, Any]:
    return {
        "query": {
            "error_lines": [
                {"text": e.text, "class": e.exc_class, "role": e.role} for e in result.query
            ]
        },
        "matches": [m.to_dict() for m in result.matches],
        "nearest": [m.to_dict() for m in result.nearest],
    }


def _as_text(result: Any, cutoff: float) -> str:
    from diagnose.matcher import field_of

    out: list[str] = []
    if result.query:
        out.append("Error line" + ("s" if len(result.query) > 1 else "") + ":")
        for line in result.query[:3]:
            shown = _one_line(line.text)
            if line.exc_class and not line.message:
                shown += "  (its message is not in the input)"
            out.append(f"  [{line.role}] {shown}")
        out.append("")
    if not result.matches:
        out.append("No record matches this error.")
        if result.nearest:
            out.append("")
            out.append(
                f"Not matches: the closest records score below the {cutoff:.2f} a match needs;\n"
                "read them as hints only, each may describe a different error."
            )
            for m in result.nearest:
                out.append(f"  - {m.slug}  score {m.score:.2f}, {m.reason}")
        elif result.query and all(line.exc_class and not line.message for line in result.query):
            out.append("Its message is needed to match it: paste the line after the traceback too.")
        else:
            out.append("No record comes close either: the dataset does not cover this error yet.")
        return "\n".join(out)
    for n, m in enumerate(result.matches, 1):
        out.append(f"{n}. {m.slug}  [{m.record_id}]  score {m.score:.2f}")
        out.append(f"   why: {m.reason}")
        solutions = field_of(m.record, "solutions") or []
        if solutions:
            out.append("   Solutions:")
            for s in solutions:
                out.append(textwrap.fill(safe(s), 96, initial_indent="     - ", subsequent_indent="       "))
        fix = field_of(m.record, "exampleFix")
        if fix and n == 1:
            out.append("   Example fix:")
            out.extend("     " + line for line in fix.splitlines())
        out.append("")
    return "\n".join(out).rstrip()


def _one_line(text: str, width: int = 110) -> str:
    text = " ".join(one_line(text).split())  # escape sequences go before the cut, not in two
    return text if len(text) <= width else text[: width - 3] + "..."
