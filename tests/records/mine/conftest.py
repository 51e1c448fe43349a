"""Fixture source trees written for these tests (``fixtures/``), and helpers to mine them."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.records.mine import Options, mine

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MYLIB = FIXTURES / "mylib"
CSRC = FIXTURES / "csrc"
SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIAGNOSE_CACHE_DIR", str(tmp_path / "cache"))


def records_of(source: Path | str, **options) -> list[dict]:
    """The skeleton records mined from ``source`` (no wrapper)."""
    return [w["record"] for w in mine(str(source), Options(**options)).wrappers]


def at_line(records: list[dict], path: str, line: int) -> dict:
    found = [r for r in records if r["filePath"] == path and r["lineNumber"] == line]
    assert len(found) == 1, f"no single record at {path}:{line}: {found}"
    return found[0]
