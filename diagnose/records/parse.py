"""Turns the bytes of one dataset file into records and located problems.

Accepted shapes: one item, a JSON array of items, or JSON Lines of items, where an item is a
wrapper ``{"record": ..., "datasetVersion": ...}`` or a bare record. ``.jsonl``/``.ndjson``
files are JSON Lines; any other file is read as one JSON document, and as JSON Lines when it
holds several values one per line (the upstream ``.txt`` files hold one wrapper per line).

Speed: the whole file is validated in one pydantic call (Rust JSON parser + validators), which
is what makes 100k records load in seconds. Only when that fails is the file taken apart item
by item, so the good items still load and each bad one gets jsonschema's precise errors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from diagnose.records.models import ErrorRecord, Item, RecordWrapper
from diagnose.records.rules import rule_errors
from diagnose.records.schema import json_path, schema_errors

JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")

_ITEM: TypeAdapter[Any] = TypeAdapter(Item)
_ITEMS: TypeAdapter[Any] = TypeAdapter(list[Item])

# (line, column, index, json path, reason): a Problem without its file, so it can be cached.
Finding = tuple[int | None, int | None, int | None, str | None, str]
# Where a record sits: (line, index, json path prefix of the record: "$" or "$.record").
Where = tuple[int | None, int | None, str]


@dataclass
class Parsed:
    records: list[ErrorRecord] = field(default_factory=list)
    where: list[Where] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    not_records: str | None = None  # why this file is not a record file at all


def _record_of(item: Any) -> tuple[ErrorRecord, str]:
    if isinstance(item, RecordWrapper):
        return item.record, "$.record"
    return item, "$"


def _prefix_of(raw: Any) -> str:
    return "$.record" if isinstance(raw, dict) and "record" in raw else "$"


def _add(out: Parsed, items: list[Any], lines: list[int | None], indexes: list[int | None]) -> None:
    for item, line, index in zip(items, lines, indexes, strict=True):
        record, prefix = _record_of(item)
        out.records.append(record)
        out.where.append((line, index, prefix))


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
    _add(out, [item], [line], [index])


# Keys of which an item has at least one if it is meant to be a record (or a wrapper).
_RECORD_KEYS = frozenset({"record", "id", "slug", "errorMessage", "messagePattern", "schemaVersion"})


def _not_records(value: Any) -> str | None:
    """Why a parsed document is clearly no record file (a schema, a map of notes), or None."""
    if isinstance(value, dict):
        if "$schema" in value:
            return "a JSON Schema, not error records"
        if not _RECORD_KEYS & value.keys():
            return "a JSON object without any error-record field"
    if isinstance(value, list) and value and not any(
        isinstance(v, dict) and _RECORD_KEYS & v.keys() for v in value
    ):
        return "a JSON array without any error record"
    return None


def _json_lines(out: Parsed, text: str) -> None:
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    try:  # fast path: every line valid
        items = _ITEMS.validate_json("[" + ",".join(line for _, line in numbered) + "]")
    except ValidationError:
        pass
    else:
        _add(out, items, [n for n, _ in numbered], [None] * len(items))
        return
    for n, line in numbered:
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            out.findings.append((n, exc.colno, None, None, f"malformed JSON: {exc.msg}"))
            continue
        _one_item(out, raw, n, None)


def parse_text(text: str, suffix: str) -> Parsed:
    """Records and findings of one file's decoded text (``suffix`` picks JSON Lines)."""
    out = Parsed()
    if not text.strip():
        out.findings.append((None, None, None, None, "empty file: no records"))
        return out
    if suffix in JSON_LINES_SUFFIXES:
        _json_lines(out, text)
        return out
    stripped = text.lstrip()
    adapter = _ITEMS if stripped.startswith("[") else _ITEM
    try:  # fast path: the whole document is valid
        parsed = adapter.validate_json(text)
    except ValidationError:
        pass
    else:
        items = parsed if isinstance(parsed, list) else [parsed]
        indexes: list[int | None] = list(range(len(items))) if adapter is _ITEMS else [None]
        _add(out, items, [None] * len(items), indexes)
        return out
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and "\n" in text.strip():
            _json_lines(out, text)  # several JSON values, one per line
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
