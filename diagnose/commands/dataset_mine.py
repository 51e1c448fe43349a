"""``diagnose dataset mine SOURCE``: record skeletons mined from a library's source.

Arguments and output of the subcommand; the mining itself is ``diagnose.records.mine``.
Skeletons go to ``--out`` (a ``.jsonl`` file of upstream wrappers, ``-`` for stdout, or a
folder that gets one ``NNNN_slug.json`` per record); the summary goes to stdout (stderr when
the skeletons do), as text or ``--format json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from diagnose.errors import ExitStatus, UsageError
from diagnose.safetext import json_text, visible

_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SHA = re.compile(r"[0-9a-f]{40}")
KIND_WORDS = {"raise": "raise", "warn": "warn", "log": "log", "cpp": "C++ checks"}


def add_arguments(sub: Any) -> None:
    mine = sub.add_parser(
        "mine",
        help="mine record skeletons from a library's source (raise/warn sites, C++ checks)",
        description=(
            "Find the raise, assert and warning sites of a library's Python files and the "
            "TORCH_CHECK-style checks of its C++ files, and write schema-v2 record skeletons "
            "with exact facts and a self-tested messagePattern. A skeleton has no text yet: "
            "write its documentation and solutions before it is shipped."
        ),
    )
    mine.add_argument(
        "source",
        metavar="SOURCE",
        help="a checkout or unpacked sdist folder, a package folder, a .whl/.zip/"
        ".tar.gz archive, or an installed package's import name",
    )
    mine.add_argument("--repo", metavar="OWNER/NAME", help="GitHub repository of the source")
    mine.add_argument(
        "--commit",
        metavar="SHA",
        help="full 40-hex commit the source is at (with --repo: githubUrl)",
    )
    mine.add_argument(
        "--prefix",
        default="",
        metavar="DIR/",
        help="folder of the package inside the repository (e.g. src/)",
    )
    mine.add_argument(
        "--out",
        metavar="FILE.jsonl|DIR|-",
        help="where to write the skeletons (default: none, summary only)",
    )
    mine.add_argument(
        "--kind",
        default="raise,warn,cpp",
        metavar="KINDS",
        help="comma-separated site kinds: raise, warn, log, cpp (default raise,warn,cpp)",
    )
    mine.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="only repository paths matching GLOB (repeatable)",
    )
    mine.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out repository paths matching GLOB (repeatable)",
    )
    mine.add_argument(
        "--max-file-size",
        type=int,
        default=2 * 1024 * 1024,
        metavar="BYTES",
        help="skip files larger than this (default 2 MiB)",
    )
    mine.add_argument(
        "--context",
        type=int,
        default=18,
        metavar="N",
        help="source lines kept before and after each site (default 18)",
    )
    mine.add_argument(
        "--format", choices=("text", "json"), default="text", help="summary format (default text)"
    )


def safe(text: object) -> str:
    """Text from the mined tree (paths, messages) on one line, every control, bidi control
    and undecodable byte shown as ``\\xNN`` (``safetext.visible``)."""
    return visible(text)


def _options(args: argparse.Namespace) -> Any:
    from diagnose.records.mine import Options
    from diagnose.records.mine.sites import KINDS

    kinds = [k.strip() for k in args.kind.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise UsageError(
            f"--kind: unknown kind {unknown[0] if unknown else '(none)'!r}; "
            f"choose from {', '.join(KINDS)}"
        )
    if args.repo is not None and not _REPO.fullmatch(args.repo):
        raise UsageError(f"--repo: {args.repo!r} is not OWNER/NAME")
    if args.commit is not None and not _SHA.fullmatch(args.commit):
        raise UsageError(f"--commit: {args.commit!r} is not a full 40-hex commit")
    if args.max_file_size < 1 or args.context < 0:
        raise UsageError("--max-file-size must be positive and --context not negative")
    prefix = args.prefix.strip("/")
    return Options(
        repo=args.repo,
        commit=args.commit,
        prefix=prefix + "/" if prefix else "",
        kinds=frozenset(kinds),
        include=tuple(args.include),
        exclude=tuple(args.exclude),
        max_file_size=args.max_file_size,
        context=args.context,
    )


def run(args: argparse.Namespace) -> int:
    from diagnose.records.mine import mine

    options = _options(args)
    out = args.out
    if out not in (None, "-"):
        _check_out(Path(out))
    result = mine(args.source, options)
    if out == "-":
        _write_stream(sys.stdout, result.wrappers)
    elif out is not None:
        _write(Path(out), result.wrappers)
    summary_stream = sys.stderr if out == "-" else sys.stdout
    for path, why in result.skipped:
        print(f"skipped {safe(path)}: {safe(why)}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(_summary(result, out), indent=2), file=summary_stream)
    else:
        print(_text(result, out), file=summary_stream)
    return ExitStatus.CLEAN


def _check_out(path: Path) -> None:
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json", ".txt"):
        if path.is_dir():
            raise UsageError(f"--out {path}: is a folder")
        if not path.parent.is_dir():
            raise UsageError(f"--out {path}: no such folder {path.parent}")
        _check_replaceable(path)
        return
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(
            f"--out {path}: exists and is not an empty folder (give a new folder, or a .jsonl file)"
        )


def _check_replaceable(path: Path) -> None:
    """Before the mining: a link, a special file or another user's file at ``--out`` is
    refused now (the writer would refuse it after the work)."""
    from diagnose.userwrite import foreign_file

    try:
        info = os.lstat(path)
    except OSError:
        return
    refusal = foreign_file(info)
    if refusal is not None:
        raise UsageError(f"--out {safe(path)}: {refusal}; nothing written")


def _line(wrapper: dict) -> str:
    """One JSON Lines record; the characters a terminal would act on (C1, bidi controls, lone
    surrogates) escaped as ``\\uNNNN``, which reads back as the same text."""
    return json_text(json.dumps(wrapper, ensure_ascii=False, separators=(",", ":")))


def _write_stream(stream: Any, wrappers: list[dict]) -> None:
    for wrapper in wrappers:
        stream.write(_line(wrapper) + "\n")


def _write(path: Path, wrappers: list[dict]) -> None:
    """The skeletons to a ``.jsonl`` file (this user's file there replaced, never a link
    followed) or to new files in a new or empty folder (each created exclusively)."""
    from diagnose.userwrite import NEW_FILE_MODE, create_new_file, write_output

    try:
        if path.suffix.lower() in (".jsonl", ".ndjson", ".json", ".txt"):
            text = "".join(_line(wrapper) + "\n" for wrapper in wrappers)
            write_output(path, text.encode("utf-8"), replace=True)
            return
        path.mkdir(parents=True, exist_ok=True)
        width = max(3, len(str(len(wrappers))))
        for i, wrapper in enumerate(wrappers):
            name = f"{i:0{width}d}_{wrapper['record']['slug']}.json"
            create_new_file(path, [name], (_line(wrapper) + "\n").encode("utf-8"), NEW_FILE_MODE)
    except OSError as exc:
        raise UsageError(f"--out {safe(path)}: cannot write: {exc.strerror or exc}") from None


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _counts(result: Any) -> str:
    kinds = [k for k in KIND_WORDS if result.sites.get(k)] or ["raise", "warn", "cpp"]
    return ", ".join(f"{result.sites.get(k, 0)} {KIND_WORDS[k]}" for k in kinds)


def _text(result: Any, out: str | None) -> str:
    lines = [
        f"{_n(result.total_sites, 'site')} in {_n(result.files_with_sites, 'file')}: "
        f"{_counts(result)}; "
        f"{len(result.wrappers)} patterns self-tested OK, {len(result.failures)} failed"
        + (" (listed)" if result.failures else "")
    ]
    for failure in result.failures:
        site = failure.site
        lines.append(
            f"  failed {safe(site.path)}:{site.line} ({site.kind}): {safe(failure.reason)}"
        )
    lines.append(
        f"{result.without_message} sites spell out no message at the site (not written); "
        f"{result.files_read} files read, {len(result.skipped)} skipped, "
        f"{result.seconds:.1f} s"
    )
    lines += [f"note: {safe(note)}" for note in result.notes]
    if out is None:
        lines.append("nothing written: give --out FILE.jsonl (or a folder) for the skeletons")
    elif result.wrappers:
        where = "stdout" if out == "-" else safe(out)
        lines.append(
            f"wrote {len(result.wrappers)} skeletons to {where}: write each one's text "
            "(documentation, solutions, ...) and drop the tag `skeleton` before it "
            "is shipped"
        )
    return "\n".join(lines)


def _summary(result: Any, out: str | None) -> dict[str, Any]:
    return {
        "source": result.source,
        "sites": result.total_sites,
        "by_kind": dict(result.sites),
        "files_with_sites": result.files_with_sites,
        "files_read": result.files_read,
        "self_tested_ok": len(result.wrappers),
        "failed": [
            {
                "path": f.site.path,
                "line": f.site.line,
                "kind": f.site.kind,
                "pattern": f.pattern,
                "reason": f.reason,
            }
            for f in result.failures
        ],
        "without_message": result.without_message,
        "skipped_files": [{"path": p, "reason": r} for p, r in result.skipped],
        "commit": result.commit,
        "notes": result.notes,
        "written": len(result.wrappers) if out is not None else 0,
        "out": out,
        "seconds": round(result.seconds, 3),
    }
