"""What ``diagnose dataset mine SOURCE`` reads: a folder, an archive, or an installed package.

Every file comes with the path it has *in the repository* (POSIX, ``--prefix`` in front):

- a repository checkout or unpacked sdist (a folder that is not itself a package): paths
  relative to the folder;
- a package folder (it has ``__init__.py`` and no ``pyproject.toml``/``setup.py``/``.git``),
  e.g. ``site-packages/torch`` or ``site-packages/torch/optim``, or an installed package
  named by its import name: paths start with the top package folder
  (``torch/optim/adam.py``), as in a wheel;
- a ``.whl``/``.zip`` (members as named, ``*.dist-info/`` left out) or a ``.tar[.gz|.bz2|.xz]``
  / ``.tgz`` (an sdist's single top folder ``name-1.0/`` dropped): read from the archive.

Whether the repository keeps the package under ``src/`` cannot be known from a wheel or an
installed package: ``--prefix src/`` says so, and the summary notes it (never guessed).

Bounded: files over ``max_size`` bytes are skipped with a reason; symbolic links are never
followed (a link inside the tree is skipped, its target is read under its own path; one that
leads out of the tree is never read); archive members that are not regular files are skipped.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
import re
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from diagnose.errors import UsageError
from diagnose.userfiles import kind_of

PYTHON_SUFFIXES = (".py",)
CPP_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".mm")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ZIP_SUFFIXES = (".whl", ".zip")
REPO_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
DEFAULT_MAX_SIZE = 2 * 1024 * 1024
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_GIT_VERSION = re.compile(rb"""^git_version\s*(?::\s*str\s*)?=\s*['"]([0-9a-f]{40})['"]""", re.M)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file to mine: its repository path and bytes, or why it is skipped."""

    path: str
    data: bytes | None
    skipped: str | None = None


@dataclass
class Tree:
    """An opened SOURCE: its files (read lazily) and what the reader learnt about it."""

    label: str
    files: Iterator[SourceFile]
    notes: list[str] = field(default_factory=list)
    packaged: bool = False  # paths come from a package layout, not from a repository
    git_version: str | None = None  # a commit the package records about itself (torch)
    git_version_from: str | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    """Which files are wanted: suffixes, ``--include``/``--exclude`` globs, the size cap."""

    suffixes: tuple[str, ...]
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_size: int = DEFAULT_MAX_SIZE
    prefix: str = ""

    def wants(self, path: str) -> bool:
        if not path.lower().endswith(self.suffixes):
            return False
        if self.include and not any(fnmatch.fnmatchcase(path, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatchcase(path, g) for g in self.exclude)

    def repo_path(self, inner: str) -> str:
        return self.prefix + inner


def open_source(source: str, selection: Selection) -> Tree:
    """Open SOURCE (see the module docstring); a UsageError says why it cannot be read."""
    path = Path(source)
    if path.is_dir():
        return _folder(path, selection)
    if path.is_file():
        name = path.name.lower()
        if name.endswith(ZIP_SUFFIXES):
            return _zip(path, selection)
        if name.endswith(TAR_SUFFIXES):
            return _tar(path, selection)
        if name.endswith(PYTHON_SUFFIXES + CPP_SUFFIXES):
            return Tree(str(path), _single(path, selection))
        raise UsageError(f"{source}: not a folder, a .whl/.zip/.tar.gz archive or a source file")
    if os.path.lexists(path):
        raise UsageError(f"{source}: cannot be read (a broken link or a special file)")
    located = _installed(source)
    if located is None:
        raise UsageError(f"{source}: no such file or folder, and no installed package of that name")
    return (
        _folder(located, selection)
        if located.is_dir()
        else Tree(source, _single(located, selection))
    )


def _installed(name: str) -> Path | None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*", name):
        return None
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            if Path(location).is_dir():
                return Path(location)
    if spec.origin and Path(spec.origin).is_file() and spec.origin.endswith(".py"):
        return Path(spec.origin)
    return None


def _is_package(folder: Path) -> bool:
    return (folder / "__init__.py").is_file() and not any(
        (folder / m).exists() for m in REPO_MARKERS
    )


def _folder(folder: Path, selection: Selection) -> Tree:
    root = folder.resolve()
    packaged = _is_package(root)
    top = root
    while packaged and _is_package(top.parent):
        top = top.parent  # a subpackage (torch/optim): paths start at the top package
    base = top.parent if packaged else root
    _refuse_doubled_prefix(folder, root, packaged, selection.prefix)
    tree = Tree(str(folder), _walk(root, base, selection), packaged=packaged)
    if packaged:
        version = top / "version.py"
        if version.is_file() and not version.is_symlink():
            _read_git_version(tree, version.read_bytes()[:65536], f"{top.name}/version.py")
    return tree


def _refuse_doubled_prefix(folder: Path, root: Path, packaged: bool, prefix: str) -> None:
    """A checkout whose own top holds the ``--prefix`` folder already names it in every path.

    ``--prefix src/`` on a repository checkout with ``src/pkg/...`` would write
    ``src/src/pkg/...`` paths and URLs that do not exist; the prefix is for a package folder
    or a wheel, whose paths start at the package.
    """
    top = prefix.strip("/").split("/", 1)[0]
    if packaged or not top or not (root / top).is_dir():
        return
    raise UsageError(
        f"--prefix {prefix}: {folder} already has {top}/ at its top, so its paths start with "
        f"{top}/ (they would read {prefix}{top}/...); drop --prefix, or mine the package "
        f"folder inside {top}/ with it"
    )


def _read_git_version(tree: Tree, data: bytes, where: str) -> None:
    m = _GIT_VERSION.search(data)
    if m:
        tree.git_version = m.group(1).decode()
        tree.git_version_from = where


def _walk(root: Path, base: Path, selection: Selection) -> Iterator[SourceFile]:
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(files):
            path = Path(folder) / name
            inner = path.relative_to(base).as_posix()
            repo_path = selection.repo_path(inner)
            if not _decodable(repo_path):
                yield SourceFile(_shown(repo_path), None, "a name that is not UTF-8 (not read)")
                continue
            if not selection.wants(repo_path):
                continue
            yield _read_file(path, root, repo_path, selection.max_size)


def _decodable(name: str) -> bool:
    """False for a name holding bytes the file system gave undecoded (lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(name: str) -> str:
    """An undecodable name with its raw bytes written as ``\\xNN``, so it can be printed."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _read_file(path: Path, root: Path, repo_path: str, max_size: int) -> SourceFile:
    """The bytes of one tree entry, or why not: a link is looked at (never followed), a FIFO
    or device is never opened, and the entry is checked again on the open handle."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return SourceFile(repo_path, None, _link_reason(path, root))
        if not stat.S_ISREG(info.st_mode):
            return SourceFile(repo_path, None, f"not a regular file ({kind_of(info.st_mode)})")
        if info.st_size > max_size:
            return SourceFile(
                repo_path, None, f"{info.st_size} bytes, over the {max_size}-byte cap"
            )
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            now = os.fstat(fh.fileno())
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                return SourceFile(repo_path, None, "replaced while being read (not read)")
            data = fh.read(max_size + 1)
    except OSError as exc:
        return SourceFile(repo_path, None, f"cannot be read: {exc.strerror or exc}")
    if len(data) > max_size:
        return SourceFile(repo_path, None, f"over the {max_size}-byte cap")
    return SourceFile(repo_path, data)


def _link_reason(path: Path, root: Path) -> str:
    """Why a link is skipped: its target is mined under its own path, lies outside, or loops."""
    try:
        target = Path(os.path.realpath(path, strict=True))
    except (OSError, RuntimeError):  # a loop (ELOOP; RuntimeError before Python 3.13) or dangling
        return "a symbolic link that loops or leads nowhere (not followed)"
    if target == root or root in target.parents:
        return "a symbolic link (its target is mined under its own path)"
    return "a symbolic link out of the tree (not followed)"


def _single(path: Path, selection: Selection) -> Iterator[SourceFile]:
    repo_path = selection.repo_path(path.name)
    yield _read_file(path, path.resolve().parent, repo_path, selection.max_size)


def _safe_member(name: str) -> str | None:
    """A member name as a clean relative POSIX path, or None (absolute, ``..``, empty)."""
    name = name.replace("\\", "/")
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if not parts or name.startswith("/") or ".." in parts:
        return None
    return "/".join(parts)


def _zip(path: Path, selection: Selection) -> Tree:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UsageError(f"{path}: not a readable zip archive: {exc}") from None
    tree = Tree(str(path), iter(()), packaged=True)
    members = [m for m in archive.infolist() if not m.is_dir()]
    for member in members:
        name = _safe_member(member.filename)
        if name and re.fullmatch(r"[^/]+/version\.py", name) and member.file_size < 65536:
            _read_git_version(tree, _zip_read(archive, member) or b"", name)
    tree.files = _zip_files(archive, members, selection)
    return tree


def _zip_read(archive: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes | None:
    try:
        with archive.open(member) as fh:
            return fh.read(member.file_size + 1)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError):
        return None


def _zip_files(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], selection: Selection
) -> Iterator[SourceFile]:
    with archive:
        for member in members:
            name = _safe_member(member.filename)
            if name is None or name.split("/", 1)[0].endswith(".dist-info"):
                continue
            repo_path = selection.repo_path(name)
            if not selection.wants(repo_path):
                continue
            mode = member.external_attr >> 16
            if mode and (mode & 0o170000) not in (0, 0o100000):
                yield SourceFile(repo_path, None, "not a regular file in the archive")
                continue
            if member.file_size > selection.max_size:
                yield SourceFile(
                    repo_path,
                    None,
                    f"{member.file_size} bytes, over the {selection.max_size}-byte cap",
                )
                continue
            data = _zip_read(archive, member)
            if data is None or len(data) > selection.max_size:
                yield SourceFile(repo_path, None, "cannot be read from the archive")
                continue
            yield SourceFile(repo_path, data)


def _tar(path: Path, selection: Selection) -> Tree:
    try:
        archive = tarfile.open(path)  # noqa: SIM115 - read lazily, closed by _tar_files
        members = archive.getmembers()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UsageError(f"{path}: not a readable tar archive: {exc}") from None
    names = [_safe_member(m.name) for m in members]
    tops = {n.split("/", 1)[0] for n in names if n}
    strip = len(tops) == 1 and all(
        n is None or "/" in n or m.isdir() for n, m in zip(names, members, strict=True)
    )
    tree = Tree(str(path), _tar_files(archive, members, names, strip, selection))
    if strip:
        tree.notes.append(f"paths are relative to the archive's top folder {next(iter(tops))}/")
    return tree


def _tar_files(
    archive: tarfile.TarFile,
    members: list[tarfile.TarInfo],
    names: list[str | None],
    strip: bool,
    selection: Selection,
) -> Iterator[SourceFile]:
    with archive:
        for member, name in zip(members, names, strict=True):
            if name is None or member.isdir():
                continue
            if strip:
                if "/" not in name:
                    continue
                name = name.split("/", 1)[1]
            repo_path = selection.repo_path(name)
            if not selection.wants(repo_path):
                continue
            if not member.isfile():
                yield SourceFile(repo_path, None, "not a regular file in the archive (a link?)")
                continue
            if member.size > selection.max_size:
                yield SourceFile(
                    repo_path, None, f"{member.size} bytes, over the {selection.max_size}-byte cap"
                )
                continue
            try:
                fh = archive.extractfile(member)
                data = fh.read(selection.max_size + 1) if fh is not None else None
            except (tarfile.TarError, OSError, EOFError):
                data = None
            if data is None:
                yield SourceFile(repo_path, None, "cannot be read from the archive")
                continue
            yield SourceFile(repo_path, data)
