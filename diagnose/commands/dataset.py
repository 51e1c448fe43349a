"""Work with error-record files: ``diagnose dataset validate [PATH...]``, ``diagnose dataset
mine SOURCE`` (record skeletons mined from a library's source).

Validates record files and folders (the shipped dataset when no path is given) against the
error-record schema (schemaVersion 2) and the loader's own rules, printing one line per problem
(file, line or array index, JSON path, reason) and a summary. Exit 0 when everything is valid,
1 when anything is not, 2 when a path does not exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from diagnose.errors import ExitStatus, UsageError
from diagnose.safetext import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)
    validate = sub.add_parser(
        "validate",
        help="validate record files and folders (default: the shipped dataset)",
        description="Validate error-record files and folders; report every bad record.",
    )
    validate.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="record files (.json, .jsonl, .txt) or folders; default: the shipped dataset",
    )
    validate.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default text)"
    )
    from diagnose.commands import dataset_mine

    dataset_mine.add_arguments(sub)


def main(args: argparse.Namespace) -> int:
    if args.dataset_command == "validate":
        return validate(args.paths, args.format)
    if args.dataset_command == "mine":
        from diagnose.commands import dataset_mine

        return dataset_mine.run(args)
    raise UsageError(f"unknown dataset action {args.dataset_command!r}")


def validate(paths: list[str], fmt: str = "text") -> int:
    from diagnose.paths import dataset_schema_path, records_dir
    from diagnose.records import load_records
    from diagnose.records.mine.skeleton import TEXT_FIELDS

    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise UsageError(f"no such file or folder: {missing[0]}")
    schema = dataset_schema_path()
    if not schema.is_file():
        raise UsageError(f"the error-record schema is missing: {schema}")
    if not paths and not records_dir().is_dir():
        raise UsageError(f"the shipped dataset is missing: {records_dir()}")
    result = load_records(*paths)
    skeletons = _skeletons(result.records)
    shipping = not paths  # the shipped dataset holds no skeleton
    if fmt == "json":
        data = {
            **result.to_dict(),
            "schema": str(schema),
            "paths": paths or [str(records_dir())],
            "skeletons": skeletons,
        }
        print(json.dumps(data, indent=2))
    else:
        for problem in result.problems:
            print(one_line(problem))
        for skeleton in skeletons:
            print(
                one_line(
                    f"{'' if shipping else 'note: '}{skeleton['slug']} [{skeleton['id']}] "
                    f"({skeleton['filePath']}): skeleton: needs text ({', '.join(TEXT_FIELDS)})"
                    + ("; a skeleton is not a shipped record" if shipping else "")
                )
            )
        for skipped in result.skipped:
            print(f"note: {one_line(skipped)}", file=sys.stderr)
        n_files = len({p.file for p in result.problems})
        tail = f"; {_plural(len(skeletons), 'skeleton')} that need text" if skeletons else ""
        print(
            f"{_plural(len(result.records), 'record')} OK, "
            f"{_plural(len(result.problems), 'problem')} in {_plural(n_files, 'file')}"
            f" ({_plural(len(result.files), 'file')} read){tail}"
        )
    ok = result.ok and not (shipping and skeletons)
    return ExitStatus.CLEAN if ok else ExitStatus.DIAGNOSED


def _skeletons(records: Any) -> list[dict[str, Any]]:
    """The mined skeletons among ``records`` (see ``diagnose.records.mine.skeleton``)."""
    from diagnose.records.mine.skeleton import is_skeleton

    tags, solutions = records.column("tags"), records.column("solutions")
    out = []
    for i in range(len(records)):
        if is_skeleton({"tags": tags[i], "solutions": solutions[i]}):
            rec = records[i]
            out.append({"id": rec.id, "slug": rec.slug, "filePath": rec.filePath})
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
