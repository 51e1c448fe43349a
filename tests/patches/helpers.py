"""Build a report by hand and patch a sample script written into a temporary folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

from diagnose.patches import PatchResult, make_patch
from diagnose.report import Report


def report_for(
    script: Path,
    *,
    line: int | None = None,
    phase: str | None = None,
    dtype: str | None = None,
    config: dict | None = None,
    event_fields: dict | None = None,
) -> Report:
    event = {
        "kind": "nonfinite",
        "message": "nan",
        "phase": phase,
        "dtype": dtype,
        **(event_fields or {}),
    }
    if line is not None:
        event["location"] = {"file": str(script), "line": line}
    return Report.model_validate(
        {
            "status": "nonfinite",
            "script": {"path": str(script)},
            "event": event,
            "config": config or {},
        }
    )


def patch(tmp_path: Path, fix_id: str, source: str, **event) -> PatchResult:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    result = make_patch(fix_id, script, report_for(script, **event))
    if result.new_source is not None:
        compile(result.new_source, str(script), "exec")  # the patched script still parses
    return result


def diff_body(result: PatchResult) -> list[str]:
    """The diff's changed lines (``-``/``+``), without headers and hunk markers."""
    assert result.diff is not None, result.note
    return [
        line.rstrip("\n")
        for line in result.diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
