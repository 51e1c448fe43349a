"""Writing a patch into the user's script: only the script the report was made from, unchanged.

The report stores the script's sha256; a script edited since then is refused (the diff was made
against other text). The original is kept beside the script as ``NAME.diagnose-bak`` (then
``.diagnose-bak.1``, ...) so that nothing the user had is lost.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.report import Report

BACKUP_SUFFIX = ".diagnose-bak"


def apply(report: Report, fix_id: str, *, backup: bool = True,
          script_path: str | Path | None = None) -> Path:
    return apply_with_backup(report, fix_id, backup=backup, script_path=script_path)[0]


def apply_with_backup(report: Report, fix_id: str, *, backup: bool = True,
                      script_path: str | Path | None = None, dry_run: bool = False
                      ) -> tuple[Path, Path | None, str]:
    """Apply (or with ``dry_run`` only check) a fix: (script, backup or None, the diff)."""
    from diagnose.patches import make_patch

    fix = next((f for f in report.fixes if f.id == fix_id), None)
    if fix is None:
        known = ", ".join(f.id for f in report.fixes) or "none"
        raise UsageError(f"the report has no fix {fix_id!r} (its fixes: {known})")
    path = Path(script_path or report.script.path)
    if not path.is_file():
        raise UsageError(f"{path}: the script of this report is not there")
    source = path.read_bytes()
    expected = report.script.sha256
    if expected and hashlib.sha256(source).hexdigest() != expected:
        raise UsageError(f"{path}: changed since the report was made; run diagnose again")
    result = make_patch(fix_id, path, report)
    if result.new_source is None:
        raise UsageError(f"{fix_id}: no patch to apply ({result.note})")
    if not expected and fix.patch and fix.patch != result.diff:
        raise UsageError(f"{path}: differs from the script the report's patch was made for")
    if dry_run:
        return path, None, result.diff
    saved = None
    if backup:
        saved = _backup_path(path)
        saved.write_bytes(source)
    _write_atomically(path, result.new_source)
    return path, saved, result.diff


def _backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + BACKUP_SUFFIX)
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}.{n}")
        n += 1
    return candidate


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.diagnose-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)
