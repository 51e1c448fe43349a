"""Writing a patch into the user's script: only the script the report was made from, unchanged.

``target.locate_script`` picks and checks the file (resolved, confined, same sha256 as the
run's); the patch is made on exactly the bytes that were checked; the original endings are
put back; the original is kept beside the real file as ``NAME.diagnose-bak`` (or, when that
name is taken by anything, even a dangling symlink, the first free ``NAME.diagnose-bak.N``),
created exclusively with the script's own mode; then ``userwrite.replace_user_file`` renames a
complete copy over the script. The CLI (``diagnose apply``) and the UI's ``a`` key both come
here.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from diagnose.errors import UsageError
from diagnose.patches.config_target import locate_config
from diagnose.patches.endings import decode_source, restore_endings
from diagnose.patches.source import unified_diff
from diagnose.patches.target import locate_script
from diagnose.report import Report
from diagnose.safetext import one_line
from diagnose.userwrite import UserFile, create_new_file, replace_user_file

if TYPE_CHECKING:
    from diagnose.patches import PatchResult

BACKUP_SUFFIX = ".diagnose-bak"
MAX_BACKUPS = 1000


@dataclass(frozen=True)
class Applied:
    """What ``apply_with_backup`` did: the script as named and as resolved, the backup, the
    diff (against the ``\\n`` text, as in the report)."""

    named: Path
    path: Path
    backup: Path | None
    diff: str
    command: list[str] | None = None  # a setting given in argv: the arguments to run with


def apply(
    report: Report,
    fix_id: str,
    *,
    backup: bool = True,
    script_path: str | Path | None = None,
    report_dir: str | Path | None = None,
    force: bool = False,
) -> Path:
    """Apply a fix; returns the resolved path of the file that was patched."""
    return apply_with_backup(
        report, fix_id, backup=backup, script_path=script_path, report_dir=report_dir, force=force
    ).path


def apply_with_backup(
    report: Report,
    fix_id: str,
    *,
    backup: bool = True,
    script_path: str | Path | None = None,
    dry_run: bool = False,
    report_dir: str | Path | None = None,
    force: bool = False,
) -> Applied:
    """Apply (or with ``dry_run`` only check and diff) a fix of ``report``.

    ``report_dir`` is the folder of the report file (relative script paths are looked for
    there too, see ``target``); ``force`` lifts the confinement and hash checks.
    """
    from diagnose.patches import make_patch

    if not any(f.id == fix_id for f in report.fixes):
        known = ", ".join(one_line(f.id) for f in report.fixes) or "none"
        raise UsageError(f"the report has no fix {one_line(fix_id)!r} (its fixes: {known})")
    target = locate_script(report, report_dir=report_dir, script_path=script_path, force=force)
    original = target.file
    try:
        text = decode_source(original.data)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{one_line(target.named)}: not UTF-8 text (byte {exc.start})") from None
    result = make_patch(fix_id, original.path, report, source=text)
    if result.argv is not None:
        return Applied(target.named, original.path, None, "", command=result.argv)
    if result.file is not None:
        return _apply_to_config(report, result, original.path.parent, backup, dry_run)
    if result.new_source is None:
        raise UsageError(f"{one_line(fix_id)}: no patch to apply ({one_line(result.note)})")
    if dry_run:
        return Applied(target.named, original.path, None, result.diff or "")
    data = restore_endings(original.data.decode("utf-8"), result.new_source).encode("utf-8")
    saved = _backup(original) if backup else None
    replace_user_file(original, data)
    return Applied(target.named, original.path, saved, result.diff or "")


def _apply_to_config(
    report: Report, result: PatchResult, script_folder: Path, backup: bool, dry_run: bool
) -> Applied:
    """Write a setting's change into the config file it came from (``config_target``)."""
    from diagnose.patches.settings import shown_path

    assert result.file is not None and result.file_source is not None
    checked = locate_config(report, result.file, script_folder)
    try:
        text = decode_source(checked.data)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{one_line(result.file)}: not UTF-8 text (byte {exc.start})") from None
    if unified_diff(text, result.file_source, shown_path(checked.path)) != result.diff:
        raise UsageError(f"{one_line(result.file)}: changed while the patch was being made")
    if dry_run:
        return Applied(Path(result.file), checked.path, None, result.diff or "")
    data = restore_endings(checked.data.decode("utf-8"), result.file_source).encode("utf-8")
    saved = _backup(checked) if backup else None
    replace_user_file(checked, data)
    return Applied(Path(result.file), checked.path, saved, result.diff or "")


def _backup(original: UserFile) -> Path:
    return create_new_file(
        original.path.parent,
        _backup_names(original.path.name),
        original.data,
        stat.S_IMODE(original.stat.st_mode) & 0o777,
    )


def _backup_names(name: str) -> Iterator[str]:
    yield name + BACKUP_SUFFIX
    for n in range(1, MAX_BACKUPS):
        yield f"{name}{BACKUP_SUFFIX}.{n}"
