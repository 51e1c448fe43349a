"""Valid error records for tests, and helpers to write dataset files in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import SEED


def seed_wrapper() -> dict[str, Any]:
    return json.loads(SEED.read_text())


def record(i: int = 0, **changes: Any) -> dict[str, Any]:
    """The upstream sample record with a distinct id and slug (and any changes)."""
    rec = seed_wrapper()["record"]
    rec["id"] = f"{i:016x}"
    rec["slug"] = f"test-record-{i}"
    rec.update(changes)
    return rec


def wrapper(i: int = 0, **changes: Any) -> dict[str, Any]:
    return {"record": record(i, **changes), "datasetVersion": "2026-08-15T22:17:37.221Z"}


def write_jsonl(path: Path, items: list[Any]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2))
    return path
