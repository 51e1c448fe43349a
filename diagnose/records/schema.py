"""The shipped JSON Schema of an error record, and precise, readable schema errors.

The loader validates records with the pydantic models (fast, whole files at once) and only asks
this module why a record failed: jsonschema names every broken field with its JSON path.

One deviation from Python's jsonschema is corrected: JSON Schema patterns are ECMA-262, where
``$`` means the end of the string, but jsonschema uses ``re.search``, where ``$`` also matches
before a final newline (so ``"abc\\n"`` would pass ``^[a-z]+$``). A trailing ``$`` is read as
``\\Z`` here, which is what the schema means and what the pydantic models do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from diagnose.paths import dataset_schema_path


def load_schema(path: Path | None = None) -> dict[str, Any]:
    """The error-record JSON Schema (the shipped ``dataset/schema.json`` by default)."""
    return json.loads((path or dataset_schema_path()).read_text(encoding="utf-8"))


@cache
def _ecma_pattern(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


@cache
def validator(path: Path | None = None) -> Any:
    """A draft 2020-12 validator for one dataset item (wrapper or bare record)."""
    from jsonschema import Draft202012Validator, ValidationError, validators

    def pattern(v: Any, patrn: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
        if v.is_type(instance, "string") and not _ecma_pattern(patrn).search(instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    cls = validators.extend(Draft202012Validator, {"pattern": pattern})
    schema = load_schema(path)
    Draft202012Validator.check_schema(schema)
    return cls(schema)


def json_path(parts: Any) -> str:
    """``$.record.tags[2]`` from a sequence of keys and indexes."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part))}]"
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _reason(error: Any) -> tuple[list[Any], str]:
    """(path parts, reason) for one jsonschema error, worded for a person fixing the file."""
    path = list(error.absolute_path)
    kind, value, arg = error.validator, error.instance, error.validator_value
    if kind == "required":
        missing = [k for k in arg if isinstance(value, dict) and k not in value]
        return [*path, missing[0] if missing else "?"], "required field is missing"
    if kind == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in allowed) if isinstance(value, dict) else []
        return [*path, extra[0] if extra else "?"], "unknown field (not in schemaVersion 2)"
    if kind == "type":
        wanted = " or ".join(arg) if isinstance(arg, list) else arg
        return path, f"expected {wanted}, got {_TYPE_NAMES.get(type(value), type(value).__name__)}"
    if kind == "pattern":
        return path, f"{_short(value)} does not match {arg}"
    if kind == "const":
        return path, f"must be {json.dumps(arg)}, got {_short(value)}"
    if kind == "enum":
        return path, f"must be one of {', '.join(map(json.dumps, arg))}, got {_short(value)}"
    if kind == "minLength":
        return path, "must not be empty" if arg == 1 else f"must be at least {arg} characters"
    if kind == "maxLength":
        return path, f"must be at most {arg} characters"
    if kind == "minItems":
        return path, f"must have at least {arg} item{'s' if arg != 1 else ''}"
    if kind == "uniqueItems":
        return path, "items must be unique"
    if kind in ("minimum", "maximum"):
        word = ">=" if kind == "minimum" else "<="
        return path, f"must be {word} {arg}, got {_short(value)}"
    return path, error.message


def schema_errors(item: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[str, str]]:
    """``(json path, reason)`` for every way ``item`` breaks the schema, in document order."""
    if not isinstance(item, dict):
        kind = _TYPE_NAMES.get(type(item), type(item).__name__)
        return [(json_path(prefix), f"expected an error record or a wrapper object, got {kind}")]
    errors = [_reason(e) for e in validator().iter_errors(item)]
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for parts, reason in sorted(errors, key=lambda e: [str(p) for p in e[0]]):
        entry = (json_path([*prefix, *parts]), reason)
        if entry not in seen:
            seen.add(entry)
            out.append(entry)
    return out
