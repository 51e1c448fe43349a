"""The changed files placed where the verification run reads them, the user's untouched.

A script reads files by paths relative to the working directory (``config/train.yaml``), to
its own folder (``os.path.dirname(__file__)``), or given on its command line. So the changed
script and the changed config file are written into *mirrors*: a mirror of a folder holds a
symlink to each of the user's entries, except the folders on the way to a changed file, which
are mirrors themselves, and the changed file, a real copy. Everything else the run reads
(data, other configs, sibling modules) is the user's; only the changed files differ.

- the working directory is mirrored when the script or the changed file lies under it; the
  run then starts in the mirror;
- otherwise the script's folder is mirrored (the run starts in the user's folder, as before);
- a changed file under neither is reachable only through an argv token that names it by its
  absolute path, which is pointed at its copy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_ENTRIES = 10_000  # a folder this big is not mirrored


@dataclass(frozen=True)
class Placed:
    """Where the run starts (None: the user's folder), the script to run, the argv."""

    cwd: Path | None
    script: Path
    argv: list[str]


def place(
    tmp: Path, script: Path, source: str, argv: list[str], file: tuple[Path, str] | None
) -> Placed | None:
    """Write the changed script (and file) into mirrors under ``tmp``; None when the changed
    file cannot be put where the run reads it, or a folder is too big to mirror."""
    cwd = Path(os.path.realpath(os.getcwd()))
    script = Path(os.path.realpath(script))
    changed = {script: source}
    if file is not None:
        changed[Path(os.path.realpath(file[0]))] = file[1]
    under_cwd = {p: t for p, t in changed.items() if p.is_relative_to(cwd) and p != cwd}
    copies: dict[Path, Path] = {}
    start = None
    if under_cwd:
        start = tmp / "cwd"
        if not _mirror(cwd, start, {p.relative_to(cwd).parts: t for p, t in under_cwd.items()}):
            return None
        copies.update({p: start / p.relative_to(cwd) for p in under_cwd})
    rest = {p: t for p, t in changed.items() if p not in copies}
    if script in rest:
        folder = script.parent
        beside = {
            p.relative_to(folder).parts: t for p, t in rest.items() if p.is_relative_to(folder)
        }
        if not _mirror(folder, tmp / "script", beside):
            return None
        copies.update(
            {p: tmp / "script" / p.relative_to(folder) for p in rest if p.is_relative_to(folder)}
        )
    return _by_argv(tmp, changed, copies, start, script, argv)


def _by_argv(
    tmp: Path,
    changed: dict[Path, str],
    copies: dict[Path, Path],
    start: Path | None,
    script: Path,
    argv: list[str],
) -> Placed | None:
    """Point argv's absolute paths of a changed file at its copy (making one if needed)."""
    out = list(argv)
    for real, text in changed.items():
        named = [i for i, a in enumerate(argv) if _names(a, real)]
        if real not in copies:
            if not named:
                return None
            (tmp / "named").mkdir(exist_ok=True)
            copies[real] = tmp / "named" / real.name
            copies[real].write_text(text, encoding="utf-8")
        for i in named:
            out[i] = _pointed(argv[i], copies[real])
    return Placed(start, copies[script], out)


def _mirror(source: Path, into: Path, changed: dict[tuple[str, ...], str]) -> bool:
    into.mkdir()
    entries = os.listdir(source)
    if len(entries) > MAX_ENTRIES:
        return False
    heads = {parts[0] for parts in changed}
    for name in entries:
        if name not in heads:
            os.symlink(source / name, into / name)
    for head in heads:
        if (head,) in changed:
            (into / head).write_text(changed[(head,)], encoding="utf-8")
            continue
        below = {p[1:]: t for p, t in changed.items() if p[0] == head and len(p) > 1}
        if not _mirror(source / head, into / head, below):
            return False
    return True


def _value(token: str) -> str:
    return token.partition("=")[2] if token.startswith("-") and "=" in token else token


def _names(token: str, real: Path) -> bool:
    """Whether ``token`` (or the value of ``--opt=token``) names ``real`` by an absolute path."""
    value = _value(token)
    try:
        return os.path.isabs(value) and Path(os.path.realpath(value)) == real
    except (OSError, ValueError):
        return False


def _pointed(token: str, copy: Path) -> str:
    value = _value(token)
    return token[: len(token) - len(value)] + str(copy)
