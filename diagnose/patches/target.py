"""Which file a report's patch may be written to: the script the run used, and only that.

A report is data that may come from someone else, so the path it names is not trusted:

- a relative ``script.path`` is what the run was given on its command line, relative to the
  folder the run ran in. That folder is not in the report, so two places are tried: the current
  folder, then the report's own folder (a report saved beside the script still works from
  anywhere). Each stays confined to the folder it is relative to: resolved (every symlink
  followed), it must lie inside that folder's tree, so ``../elsewhere/other.py`` or a link
  out of the tree is refused;
- an absolute ``script.path``, resolved, must lie inside the report's folder tree or the
  current folder's;
- when both places hold the file, the one whose contents match the report's hash is chosen;
- the chosen file must still be the one the report was made from: its sha256 must equal the
  report's. A report without a hash, or a script changed since, is refused;
- ``force`` lifts the confinement and the hash check (for a script that really moved or was
  really edited); ``--script PATH`` names the file on the user's own authority (no
  confinement; the hash is still checked).

The file is resolved on purpose: a symlinked script is followed to its target, which is the
file that gets patched (the link stays a link).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.report import Report
from diagnose.safetext import one_line
from diagnose.userwrite import UserFile, read_user_file, resolve

FORCE_HINT = "--force patches it anyway"


@dataclass(frozen=True)
class Target:
    """The file to patch: as named (for messages) and as read (resolved, with its bytes)."""

    named: Path
    file: UserFile


def locate_script(
    report: Report,
    *,
    report_dir: str | Path | None = None,
    script_path: str | Path | None = None,
    force: bool = False,
) -> Target:
    """The script of ``report`` to patch, read and checked; UsageError of one line if none."""
    if script_path is not None:
        target = Target(Path(script_path), read_user_file(script_path))
    else:
        target = _from_report(report, report_dir, force)
    _check_hash(report, target, force)
    return target


def _from_report(report: Report, report_dir: str | Path | None, force: bool) -> Target:
    named = report.script.path
    if not named or "\x00" in named:
        raise UsageError(f"the report names no usable script path ({one_line(named)!r})")
    cwd = resolve(os.getcwd())
    home = resolve(report_dir) if report_dir is not None else None
    if Path(named).is_absolute():
        places = [(Path(named), [r for r in (home, cwd) if r is not None])]
    else:
        places = [(Path(named), [cwd])]  # the process's cwd, as the run's
        if home is not None and home != cwd:
            places.append((home / named, [home]))
    found: list[Target] = []
    escaped: list[tuple[Path, Path]] = []
    unreadable: list[UsageError] = []
    for path, roots in places:
        if not os.path.lexists(path):
            continue
        real = resolve(path)
        if not force and not any(real.is_relative_to(root) for root in roots):
            escaped.append((path, real))
            continue
        if any(t.file.path == real for t in found):
            continue
        try:
            found.append(Target(path, read_user_file(path)))
        except UsageError as exc:  # a folder or a pipe of that name: the other place may do
            unreadable.append(exc)
    if found:
        return next((t for t in found if _matches(report, t)), found[0])
    if unreadable:
        raise unreadable[0]
    if escaped:
        path, real = escaped[0]
        where = "the report's folder or the current folder" if home else "the current folder"
        raise UsageError(
            f"{one_line(path)}: resolves to {one_line(real)}, outside {where}; "
            f"the report may name only its own script ({FORCE_HINT})"
        )
    looked = "the current folder" + (" and the report's folder" if home else "")
    raise UsageError(
        f"{one_line(named)}: the script of this report is not there "
        f"(looked in {looked}); name it with --script"
    )


def _matches(report: Report, target: Target) -> bool:
    expected = report.script.sha256
    return bool(expected) and hashlib.sha256(target.file.data).hexdigest() == expected


def _check_hash(report: Report, target: Target, force: bool) -> None:
    if force or _matches(report, target):
        return
    if not report.script.sha256:
        raise UsageError(
            f"{one_line(target.named)}: the report has no hash of the script it was "
            f"made from, so it cannot tell whether the script changed since "
            f"({FORCE_HINT})"
        )
    raise UsageError(
        f"{one_line(target.named)}: changed since the report was made (its sha256 "
        f"differs); run diagnose again ({FORCE_HINT})"
    )
