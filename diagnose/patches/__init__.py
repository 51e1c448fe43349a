"""Concrete patches against the user's own script, one module per kind of fix.

``make_patch(fix_id, script, report)`` returns a ``PatchResult`` (a unified diff, a note, the new
source); ``attach_patches(report, script)`` fills ``fix.patch`` / ``fix.patch_note`` for every
fix of a report; ``apply_patch(report, fix_id)`` writes one to the script, keeping a backup.
A fix without a concrete patch keeps its example patch and says why in ``patch_note``; so does
one whose patch would not compile or would change more than its fix (``checks``).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path

from diagnose.patches.checks import check_patch
from diagnose.patches.context import PatchContext
from diagnose.patches.registry import PATCHERS, patcher
from diagnose.patches.source import NoPatch, Script, unified_diff
from diagnose.report import Report

__all__ = ["PATCHERS", "PatchResult", "apply_patch", "attach_patches", "make_patch", "patcher"]

# Each kind registers its patchers (``@patcher(fix_id)``) when it is imported, so every module
# here is imported: a new kind needs no line anywhere else.
for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


@dataclass
class PatchResult:
    """``diff``: a unified diff against the script (None when there is nothing to apply);
    ``note``: why there is no patch, or what the patch does / how to apply it instead;
    ``new_source``: the patched script's text (None without a diff).

    A setting that lives outside the script is changed there instead: ``argv`` is the command
    line to run instead (nothing to write), or ``file`` is the config file the run read and
    ``file_source`` its new text (``diff`` is then against that file). One change at most.
    """

    diff: str | None
    note: str | None
    new_source: str | None = None
    argv: list[str] | None = None
    file: str | None = None
    file_source: str | None = None

    @property
    def runnable(self) -> bool:
        """Whether there is a change to run (a script, a command line or a config file)."""
        return self.new_source is not None or self.argv is not None or self.file is not None


def make_patch(
    fix_id: str, script_path: str | Path, report: Report, *, source: str | None = None
) -> PatchResult:
    """The concrete patch of ``fix_id`` against ``script_path`` for the run in ``report``.

    ``source``: the script's text when the caller already read (and checked) it, so that the
    patch is made on exactly that text.
    """
    path = Path(script_path)
    patcher = PATCHERS.get(fix_id)
    if patcher is None:
        return PatchResult(None, "no automatic patch for this fix: see the example")
    if source is None:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return PatchResult(None, f"cannot read {path}: {exc}")
    try:
        ctx = PatchContext(Script(str(path), source), report, path)
        patched = patcher(ctx)
        changes_script = patched.argv is None and patched.file is None
        if changes_script and patched.source is not None and patched.source != source:
            check_patch(str(path), source, patched.source, ctx.edits)
    except NoPatch as exc:
        return PatchResult(None, f"no automatic patch: {exc}")
    if patched.argv is not None:
        return PatchResult(None, patched.note, argv=patched.argv)
    if patched.file is not None and patched.file_source is not None:
        return _file_change(patched)
    if patched.source is None or patched.source == source:
        return PatchResult(None, patched.note)
    return PatchResult(
        unified_diff(source, patched.source, path.name), patched.note, patched.source
    )


def _file_change(patched) -> PatchResult:
    from diagnose.errors import UsageError
    from diagnose.userwrite import read_user_file

    try:
        before = read_user_file(patched.file).data.decode("utf-8")
    except (UsageError, UnicodeDecodeError) as exc:
        return PatchResult(None, f"cannot read {patched.file}: {exc}")
    if before == patched.file_source:
        return PatchResult(None, patched.note)
    from diagnose.patches.settings import shown_path

    diff = unified_diff(before, patched.file_source, shown_path(Path(patched.file)))
    return PatchResult(diff, patched.note, file=patched.file, file_source=patched.file_source)


def attach_patches(report: Report, script_path: str | Path) -> Report:
    """Fill ``patch`` and ``patch_note`` of every fix in ``report``; returns the report."""
    for fix in report.fixes:
        result = make_patch(fix.id, script_path, report)
        fix.patch = result.diff
        fix.patch_note = result.note
        if result.file is not None:
            fix.patch_file = result.file
        if result.argv is not None:
            fix.patch_argv = result.argv
    return report


def apply_patch(
    report: Report,
    fix_id: str,
    *,
    backup: bool = True,
    script_path: str | Path | None = None,
    report_dir: str | Path | None = None,
    force: bool = False,
) -> Path:
    """Write ``fix_id``'s patch into the script the report was made from; returns its path.

    See ``diagnose.patches.apply`` for which file that is and how it is written safely.
    """
    from diagnose.patches.apply import apply

    return apply(
        report, fix_id, backup=backup, script_path=script_path, report_dir=report_dir, force=force
    )
