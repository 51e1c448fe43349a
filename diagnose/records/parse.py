"""Turns the bytes of one dataset file into records and located problems.

Accepted shapes: one item, a JSON array of items, or JSON Lines of items, where an item is a
wrapper ``{"record": ..., "datasetVersion": ...}`` or a bare record. ``.jsonl``/``.ndjson``
files are JSON Lines; any other file is read as one JSON document, and as JSON Lines when it
holds several values one per line (the upstream ``.txt`` files hold one wrapper per line).

Speed: the bytes go straight to pydantic's Rust JSON parser and validators (no Python
``json.loads`` first, no decoding): a whole document in one call, JSON Lines one call per line.
Which model to try (wrapper or bare record) is guessed from the bytes, not decided per item by
a Python discriminator (which cost a third of the validation time). Only what fails that fast
path is taken apart again: the file is decoded (to report a file that is not UTF-8), and each
failing item gets jsonschema's precise errors, so every good item still loads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from diagnose import jsonsafe
from diagnose.jsonsafe import JSONLimitError
from diagnose.records.models import ErrorRecord, Item, RecordWrapper
from diagnose.records.rules import rule_errors
from diagnose.records.schema import json_path, schema_errors

JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")

_ITEM: TypeAdapter[Any] = TypeAdapter(Item)
_WRAPPER: TypeAdapter[RecordWrapper] = TypeAdapter(RecordWrapper)
_RECORD: TypeAdapter[ErrorRecord] = TypeAdapter(ErrorRecord)
_WRAPPERS: TypeAdapter[list[RecordWrapper]] = TypeAdapter(list[RecordWrapper])
_RECORDS: TypeAdapter[list[ErrorRecord]] = TypeAdapter(list[ErrorRecord])
# (is the document an array, are its items wrappers) -> the adapter for the fast path
_ADAPTERS: dict[tuple[bool, bool], TypeAdapter[Any]] = {
    (True, True): _WRAPPERS,
    (True, False): _RECORDS,
    (False, True): _WRAPPER,
    (False, False): _RECORD,
}
_BLANK = re.compile(rb"[ \t\r\n]*")

# (line, column, index, json path, reason): a Problem without its file, so it can be cached.
Finding = tuple[int | None, int | None, int | None, str | None, str]
# Where a record sits: (line, index, json path prefix of the record: "$" or "$.record").
Where = tuple[int | None, int | None, str]


@dataclass
class Parsed:
    """One file's records (a list when just parsed, a lazy sequence from the cache), where each
    sits, and what is wrong in it."""

    records: Any = field(default_factory=list)  # Sequence[ErrorRecord]
    where: Any = field(default_factory=list)  # Sequence[Where], parallel to records
    findings: list[Finding] = field(default_factory=list)
    not_records: str | None = None  # why this file is not a record file at all


def _prefix_of(raw: Any) -> str:
    return "$.record" if isinstance(raw, dict) and "record" in raw else "$"


def _item_findings(raw: Any, line: int | None, index: int | None) -> list[Finding]:
    """Why one item is invalid: schema errors first, then the loader-only rules."""
    found = schema_errors(raw)
    reported = {path for path, _ in found}
    prefix = _prefix_of(raw)
    inner = raw.get("record") if prefix == "$.record" else raw
    if isinstance(inner, dict):
        for name, reason in rule_errors(inner):
            path = f"{prefix}.{name}"
            if path not in reported:
                found.append((path, reason))
    if not found:  # the models are stricter than the schema here: say what they say
        try:
            _ITEM.validate_python(raw)
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                loc = [p for p in err["loc"] if p not in ("wrapper", "record")] or []
                found.append((json_path(loc if prefix == "$" else ["record", *loc]), err["msg"]))
    return [(line, None, index, path, reason) for path, reason in found]


def _one_item(out: Parsed, raw: Any, line: int | None, index: int | None) -> None:
    try:
        item = _ITEM.validate_python(raw)
    except ValidationError:
        out.findings.extend(_item_findings(raw, line, index))
        return
    if isinstance(item, RecordWrapper):
        out.records.append(item.record)
        out.where.append((line, index, "$.record"))
    else:
        out.records.append(item)
        out.where.append((line, index, "$"))


# Keys of which an item has at least one if it is meant to be a record (or a wrapper).
_RECORD_KEYS = frozenset(
    {"record", "id", "slug", "errorMessage", "messagePattern", "schemaVersion"}
)


def _not_records(value: Any) -> str | None:
    """Why a parsed document is clearly no record file (a schema, a map of notes), or None."""
    if isinstance(value, dict):
        if "$schema" in value:
            return "a JSON Schema, not error records"
        if not _RECORD_KEYS & value.keys():
            return "a JSON object without any error-record field"
    if (
        isinstance(value, list)
        and value
        and not any(isinstance(v, dict) and _RECORD_KEYS & v.keys() for v in value)
    ):
        return "a JSON array without any error record"
    return None


_WRAPPED = re.compile(rb'"record"\s*:')
_GUESS_BYTES = 1 << 16


def _looks_wrapped(data: bytes) -> bool:
    """Whether the items are probably wrappers, from the start of the document: a ``"record"``
    followed by ``:`` can only be a key (inside a JSON string the quotes are escaped). A wrong
    guess (a mixed file) only costs speed: the document then goes the slow way."""
    return _WRAPPED.search(data, 0, _GUESS_BYTES) is not None


def _decode_error(data: bytes) -> Finding | None:
    """A file-level finding when ``data`` is not UTF-8 (the file then loads no record)."""
    if data.isascii():  # the common case, checked without decoding (0.1 s per 200 MB)
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.start + 1].hex()
        return (line, None, None, None, f"not UTF-8: {exc.reason} 0x{bad} at byte {exc.start}")
    return None


def _slow_line(out: Parsed, line: bytes, n: int) -> None:
    try:
        raw = jsonsafe.loads(line.decode("utf-8"))
    except json.JSONDecodeError as exc:
        out.findings.append((n, exc.colno, None, None, f"malformed JSON: {exc.msg}"))
        return
    except JSONLimitError as exc:
        out.findings.append((n, None, None, None, str(exc).replace(" at line 1", "")))
        return
    _one_item(out, raw, n, None)


def _lines(data: bytes, start: int, end: int) -> Iterator[bytes]:
    """The lines of ``data[start:end]`` (as ``split(b"\\n")``), one at a time: splitting
    100k lines at once kept 200 MB more alive and cost 5% more time (page faults)."""
    find = data.find
    while True:
        stop = find(b"\n", start, end)
        if stop < 0:
            yield data[start:end]
            return
        yield data[start:stop]
        start = stop + 1


def _json_lines(
    out: Parsed,
    data: bytes,
    whole: bytes,
    first_line: int = 1,
    start: int = 0,
    end: int | None = None,
) -> bool:
    """JSON Lines: each line validated in one pydantic call; failing lines the slow way.

    ``whole`` is the whole file; ``data[start:end]`` is it without a byte order mark, or a piece
    of it that starts at line ``first_line``. When a line fails, ``whole`` is checked once for
    UTF-8: a file that is not UTF-8 is reported as a whole, and False returned.
    """
    wrapper, record = _WRAPPER.validate_json, _RECORD.validate_json
    records, where = out.records, out.where
    checked = False
    lines = _lines(data, start, len(data) if end is None else end)
    for n, line in enumerate(lines, first_line):
        if not line or line.isspace():
            continue
        wrapped = b'"record"' in line
        try:
            item = wrapper(line) if wrapped else record(line)
        except ValidationError:
            if not checked:
                checked = True
                problem = _decode_error(whole)
                if problem is not None:
                    out.records, out.where, out.findings = [], [], [problem]
                    return False
            _slow_line(out, line, n)
            continue
        if wrapped:
            records.append(item.record)
            where.append((n, None, "$.record"))
        else:
            records.append(item)
            where.append((n, None, "$"))
    return True


def parse_lines(data: bytes, start: int, end: int, whole: bytes, first_line: int) -> Parsed | None:
    """The records and findings of the lines ``data[start:end]`` of a JSON Lines file, the
    first of them line ``first_line`` (as ``parse_bytes`` finds them for those lines of the whole
    file), or None when ``whole`` turns out not to be UTF-8: a finding about the whole file."""
    out = Parsed()
    return out if _json_lines(out, data, whole, first_line, start, end) else None


# A first line longer than this is not read twice to see whether the file is JSON Lines.
_FIRST_LINE_MAX = 1 << 22


def json_lines_start(data: bytes, suffix: str) -> tuple[int, bool] | None:
    """Where the lines start (after a byte order mark) when ``parse_bytes`` reads ``data`` as
    JSON Lines, and whether it first checks the whole file for UTF-8 (it does for a file that is
    JSON Lines only by its content); None when it does not read it line by line (or may not).

    Without a JSON Lines suffix, ``parse_bytes`` reads the lines when the document is several
    JSON values: that is when its first line alone is one whole value and something follows.
    """
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    if suffix in JSON_LINES_SUFFIXES:
        return None if data[bom:].isspace() or len(data) == bom else (bom, False)
    start = _BLANK.match(data, bom).end()  # type: ignore[union-attr]
    end = data.find(b"\n", start, start + _FIRST_LINE_MAX)
    if end < 0 or not _text_follows(data, end):
        return None
    try:
        json.loads(data[start:end].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return bom, True


def _text_follows(data: bytes, end: int) -> bool:
    """Whether ``data[end:]`` holds more than whitespace as ``str.strip`` sees it (what
    ``_document_slow`` asks), judged from the last 4 KiB; False when unsure."""
    cut = max(end, len(data) - 4096)
    while cut > end and 0x80 <= data[cut] < 0xC0:  # not inside a UTF-8 sequence
        cut -= 1
    try:
        tail = data[cut:].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return bool(tail.strip())


def _document_fast(out: Parsed, data: bytes) -> bool:
    """Validate a whole JSON document in one call; False when it is not simply all valid."""
    start = _BLANK.match(data).end()  # type: ignore[union-attr]
    is_array = data[start : start + 1] == b"["
    wrapped = _looks_wrapped(data)
    adapter = _ADAPTERS[is_array, wrapped]
    try:
        value = adapter.validate_json(data)
    except ValidationError:
        return False
    items = value if is_array else [value]
    if not items:  # "[]": the slow path says why this is a problem
        return False
    prefix = "$.record" if wrapped else "$"
    out.records.extend([item.record for item in items] if wrapped else items)
    out.where.extend((None, i if is_array else None, prefix) for i in range(len(items)))
    return True


def parse_bytes(data: bytes, suffix: str) -> Parsed:
    """Records and findings of one file's bytes (``suffix`` picks JSON Lines)."""
    out = Parsed()
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    body = data[bom:] if bom else data
    if not body or body.isspace():
        out.findings.append((None, None, None, None, "empty file: no records"))
        return out
    if suffix in JSON_LINES_SUFFIXES:
        _json_lines(out, body, data)
        return out
    if _document_fast(out, body):
        return out
    problem = _decode_error(data)
    if problem is not None:
        out.findings.append(problem)
        return out
    return _document_slow(out, body)


def _document_slow(out: Parsed, data: bytes) -> Parsed:
    text = data.decode("utf-8")
    try:
        value = jsonsafe.loads(text)
    except JSONLimitError as exc:
        out.findings.append((None, None, None, None, str(exc)))
        return out
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and "\n" in text.strip():
            _json_lines(out, data, data)  # several JSON values, one per line
            return out
        out.findings.append((exc.lineno, exc.colno, None, None, f"malformed JSON: {exc.msg}"))
        return out
    out.not_records = _not_records(value)
    if out.not_records is not None:
        return out
    if isinstance(value, list):
        if not value:
            out.findings.append((None, None, None, "$", "empty array: no records"))
        for i, raw in enumerate(value):
            _one_item(out, raw, None, i)
    else:
        _one_item(out, value, None, None)
    return out
