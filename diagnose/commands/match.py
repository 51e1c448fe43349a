"""Rank error-dataset records for an error message, or a whole traceback or log.

    diagnose match "RuntimeError: CUDA out of memory ..."
    diagnose match train.log
    python train.py 2>&1 | diagnose match -
    diagnose match --message "train.py"

A single argument that looks like a file name (it holds a / or ends in .log, .txt, .out, ...)
is a file to read, and one that does not exist is an error; --message passes such text as the
message itself. A training log whose loss or gradient norm went nan/inf with no exception,
and a DebugUnderflowOverflow or anomaly-mode dump, are read as such. Exit 0 when a record
matches or the log's loss went non-finite, 1 when neither (near misses are shown apart, as
not matches), 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from diagnose.errors import ExitStatus, UsageError
from diagnose.render.bounded import clip
from diagnose.safetext import json_text, one_line, safe


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "words",
        nargs="*",
        metavar="MESSAGE",
        help=(
            "the error message (words are joined), or the path of a file that holds it (a log, "
            "a traceback); '-' or nothing with piped stdin reads stdin"
        ),
    )
    parser.add_argument(
        "--message",
        metavar="TEXT",
        help="the error message itself, even when it looks like a file name",
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
    from diagnose.matcher import Matcher, field_of
    from diagnose.matching.divergence import diagnose_log
    from diagnose.matching.dumps import read_dump

    text = _read_message(args.message, args.words)
    index = _load(args.dataset)
    matcher = Matcher(index.records, literals=index.literals)
    result = matcher.search(text, limit=args.limit, nearest=3)
    for record, why in matcher.problems:
        print(f"diagnose: warning: record {field_of(record, 'id')}: {why}", file=sys.stderr)
    for record in matcher.timeouts:
        print(
            f"diagnose: warning: record {field_of(record, 'id')}: its messagePattern ran past "
            f"its time bound and was counted as not matching",
            file=sys.stderr,
        )
    training_log = diagnose_log(text)
    dump = read_dump(text)
    if args.format == "json":
        data = _as_json(result)
        data["training_log"] = training_log.to_dict() if training_log else None
        data["dump"] = dump.to_dict() if dump else None
        print(json_text(json.dumps(data, indent=2, ensure_ascii=False)))
    else:
        read = [
            section
            for section in (
                _dump_text(dump) if dump else None,
                _training_log_text(training_log) if training_log else None,
            )
            if section
        ]
        if not read or result.matched:
            read.append(_as_text(result, matcher.cutoff))
        # The log, the query and --dataset records are all untrusted: the whole text goes
        # through safe(), which leaves diagnose's own words as they are.
        print(safe("\n\n".join(read)))
    answered = result.matched or training_log is not None or dump is not None
    return ExitStatus.CLEAN if answered else ExitStatus.DIAGNOSED


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _read_message(message: str | None, words: list[str]) -> str:
    if message is not None:
        if words:
            raise UsageError("--message TEXT is the whole message: give no other MESSAGE words")
        text = message
    elif len(words) == 1 and words[0] != "-" and _names_a_file(words[0]):
        text = _read_file(Path(words[0]))
    elif len(words) == 1 and looks_like_a_path(words[0]):
        what = "a folder, not a log file" if _is_folder(words[0]) else "no such file"
        raise UsageError(f"{words[0]}: {what} (to match it as a message: --message TEXT)")
    elif words and words != ["-"]:
        text = " ".join(words)
    elif words == ["-"] or not sys.stdin.isatty():
        text = _read_stdin()
    else:
        raise UsageError("no error message: pass MESSAGE, or pipe a log into 'diagnose match -'")
    if not text.strip():
        raise UsageError("the error message is empty")
    return text


# what a log or traceback file is called (a rotated log too: train.log.1)
_FILE_SUFFIX = re.compile(
    r"\.(?:log|logs|txt|text|out|err|stderr|stdout|trace|tb|json|jsonl|ndjson|md|py|gz)"
    r"(?:\.\d+)?$",
    re.IGNORECASE,
)
_EXCEPTION_NAME = re.compile(r"[\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b")


def looks_like_a_path(word: str) -> bool:
    """Whether one argument is meant as a file: one word that holds a path separator, starts
    like a path (``~``, ``./``) or ends in a log file's suffix (``train.log``, ``out.txt``,
    ``run.log.1``). An error message has spaces, or starts with its exception's name."""
    if not word or any(c.isspace() for c in word) or _EXCEPTION_NAME.match(word):
        return False
    return "/" in word or "\\" in word or word.startswith("~") or bool(_FILE_SUFFIX.search(word))


def _names_a_file(word: str) -> bool:
    """An existing path that is not a folder (a FIFO or a device too: the reader refuses it)."""
    try:
        return Path(word).exists() and not Path(word).is_dir()
    except (OSError, ValueError):  # a message too long for a path, or with a NUL
        return False


def _is_folder(word: str) -> bool:
    try:
        return Path(word).is_dir()
    except (OSError, ValueError):
        return False


def _read_file(path: Path) -> str:
    """A log or traceback file; bytes that are not UTF-8 (a progress bar's) are replaced."""
    from diagnose.userfiles import LOG_TAIL, UserFileError, read_bytes

    try:
        data = read_bytes(path, LOG_TAIL, tail=True)
    except UserFileError as exc:
        raise UsageError(str(exc)) from None
    return data.decode("utf-8", errors="replace")


def _read_stdin() -> str:
    """The end of a log piped in; an endless pipe is refused after a cap, not read forever."""
    from diagnose.userfiles import LOG_TAIL, STDIN_CAP, read_stream_tail, size_words

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream put in place of stdin
        return sys.stdin.read(STDIN_CAP)
    data = read_stream_tail(stream, LOG_TAIL, STDIN_CAP)
    if data is None:
        raise UsageError(
            f"stdin: more than the {size_words(STDIN_CAP)} a log may have here; "
            "pipe in its end instead (e.g. tail -c 10M)"
        )
    return data.decode("utf-8", errors="replace")


def _load(extra: list[str]) -> Any:
    """Built-in records plus ``--dataset`` files (a saved index when nothing changed); their
    problems go to stderr, one a line."""
    from diagnose.matching.index import load_index

    for path in extra:
        if not Path(path).exists():
            raise UsageError(f"--dataset {path}: no such file or folder")
    index = load_index(extra)
    for problem in index.problems:
        print(f"diagnose: warning: {one_line(problem)}", file=sys.stderr)
    return index


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


_SHOWN_SOLUTIONS = 12  # a record lists a handful; a crafted one may list a million
_SHOWN_CHARS = 4_000  # per solution or example fix, in a listing of several records


def _as_text(result: Any, cutoff: float) -> str:

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
        out += _match_text(n, m)
    return "\n".join(out).rstrip()


def _match_text(n: int, m: Any) -> list[str]:
    """One match's lines; a record's text within bounds (the whole of it stays in the dataset)."""
    from diagnose.matcher import field_of

    out = [f"{n}. {m.slug}  [{m.record_id}]  score {m.score:.2f}", f"   why: {m.reason}"]
    where = f"the full text is in record {one_line(m.record_id)} of the dataset"
    solutions = field_of(m.record, "solutions") or []
    if solutions:
        out.append("   Solutions:")
        for s in solutions[:_SHOWN_SOLUTIONS]:
            out.append(
                textwrap.fill(
                    clip(safe(s), where, _SHOWN_CHARS),
                    96,
                    initial_indent="     - ",
                    subsequent_indent="       ",
                )
            )
        if len(solutions) > _SHOWN_SOLUTIONS:
            out.append(f"     ... and {len(solutions) - _SHOWN_SOLUTIONS:,} more in the record")
    fix = field_of(m.record, "exampleFix")
    if fix and n == 1:
        out.append("   Example fix:")
        out.extend("     " + line for line in clip(fix, where, _SHOWN_CHARS).splitlines())
    out.append("")
    return out


def _training_log_text(diagnosis: Any) -> str:
    """The log's first non-finite metric, what led there, the causes it supports, the command."""
    from diagnose.render.numbers import num

    out = [f"Training log: {safe(diagnosis.what)}, with no exception."]
    if diagnosis.before:
        out.append(f"  Before it (the last {len(diagnosis.before)} of the logged rows):")
        for row in diagnosis.before:
            cells = [f"line {row.line}"]
            if row.step_key and row.step is not None:
                cells.append(f"{safe(row.step_key)} {num(row.step, 4)}")
            for label, value in (
                ("loss", row.loss),
                ("grad norm", row.grad_norm),
                ("lr", row.lr),
                ("loss scale", row.loss_scale),
            ):
                if value is not None:
                    cells.append(f"{label} {num(value, 3)}")
            out.append("    " + "  ".join(cells))
    else:
        out.append("  It is the first row of the log that shows a loss or a gradient norm.")
    out.append(f"  At it: {_one_line(safe(diagnosis.first.text))}")
    if diagnosis.scale_changes:
        out.append(
            f"  The loss scaler lowered its scale {diagnosis.scale_changes} time(s) "
            "after overflows."
        )
    nothing = (
        "The log alone does not support a cause: the rows before it look steady."
        if len(diagnosis.before) >= 2
        else "The log shows too few rows before it to read a trend from."
    )
    out += _ranked_text(diagnosis, "a log shows no producer", nothing)
    out.append(
        "  To find the module, op and line where the first nan was born, run the "
        "script under the tracer:"
    )
    out.append(f"    {safe(diagnosis.command)}")
    return "\n".join(out)


def _ranked_text(diagnosis: Any, limits: str, nothing: str) -> list[str]:
    """The causes and fixes the rules rank for pasted evidence, with what that evidence lacks."""

    out: list[str] = []
    if diagnosis.causes:
        out.append(f"  What it supports ({limits}: confidences are scaled down for that):")
        for cause in diagnosis.causes:
            out.append(f"    - {safe(cause.title)} ({cause.confidence:.2f})")
            out.extend(f"        {safe(line)}" for line in cause.evidence)
    else:
        out.append(f"  {nothing}")
    if diagnosis.fixes:
        out.append("  Fixes the rules rank first for that:")
        out.extend(
            f"    {n}. {safe(f.title)} [{safe(f.id)}] score {f.score:.2f}"
            for n, f in enumerate(diagnosis.fixes, 1)
        )
    return out


def _dump_text(dump: Any) -> str:
    """A DebugUnderflowOverflow or anomaly-mode dump: where the first nan was born, and why."""

    out = [f"{safe(dump.tool)}: {safe(dump.what)}."]
    if dump.code:
        out.append(f"    {safe(dump.code)}")
    out.extend(f"  {safe(line)}" for line in dump.evidence)
    limits = (
        "a dump shows no step history and no config"
        if dump.module
        else "anomaly mode shows no magnitudes, history or config"
    )
    out += _ranked_text(dump, limits, "The dump alone does not support a cause.")
    return "\n".join(out)


def _one_line(text: str, width: int = 110) -> str:
    text = " ".join(one_line(text).split())  # escape sequences go before the cut, not in two
    return text if len(text) <= width else text[: width - 3] + "..."
