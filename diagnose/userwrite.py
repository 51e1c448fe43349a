"""The one way diagnose changes a user's file: resolve it on purpose, replace it atomically.

Writing a user's script goes wrong in quiet ways: a fixed temporary name that someone
pre-placed as a symlink makes the write land in another file; a backup written through a
dangling symlink creates a file elsewhere; ``os.replace`` onto a symlinked script replaces the
link and leaves the real script untouched; a new file gets the umask's mode instead of the
script's. So every step here works on the *resolved* file (``realpath``, chosen on purpose by
the caller) through one handle on its folder, never follows a link at the last component, and
creates what it writes exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``) under a name nobody can
guess or reuse:

- ``read_user_file(path)`` resolves ``path`` and reads it, refusing anything that is not a
  regular file (a FIFO is not opened, so the read never blocks);
- ``replace_user_file(file, data)`` writes ``data`` to a fresh temporary file in the same
  folder with the original's mode (and owner, where allowed), syncs it, and renames it over the
  original, after checking the original is still the file that was read;
- ``create_new_file(folder, names, data, mode)`` creates the first of ``names`` that does not
  exist yet (a symlink, even a dangling one, counts as existing);
- ``write_output(path, data, replace=...)`` writes a file a command was asked to produce (an
  export, mined skeletons): created exclusively, or -- only when ``replace`` says the user
  agreed -- an existing regular file of this user's replaced atomically. A link there is never
  followed, and another user's file is never replaced.

Every refusal is a ``UsageError`` of one line.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError
from diagnose.safetext import one_line
from diagnose.userfiles import SCRIPT_CAP, kind_of

MAX_BYTES = SCRIPT_CAP  # a script larger than this is not something a patch can help
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CREATE = os.O_CREAT | os.O_EXCL | os.O_WRONLY | _NOFOLLOW | _CLOEXEC
_TEMP_TRIES = 100


@dataclass(frozen=True)
class UserFile:
    """A regular file as it was read: its resolved path, its bytes, and the stat they match."""

    path: Path
    data: bytes
    stat: os.stat_result


def resolve(path: str | Path) -> Path:
    """The real path of an existing ``path`` (every symlink followed); UsageError if none."""
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise UsageError(f"{one_line(path)}: no such file") from None
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{one_line(path)}: cannot resolve: {reason}") from None


def read_user_file(path: str | Path) -> UserFile:
    """Resolve ``path`` and read the regular file it names."""
    real = resolve(path)
    with _folder(real.parent) as folder:
        try:
            before = os.stat(real.name, dir_fd=folder, follow_symlinks=False)
            _check_regular(path, before)
            fd = os.open(real.name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=folder)
        except OSError as exc:
            raise UsageError(f"{one_line(path)}: cannot read: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            now = os.fstat(handle.fileno())
            if not _same_file(before, now):
                raise UsageError(f"{one_line(path)}: was replaced while being read; try again")
            if now.st_size > MAX_BYTES:
                raise UsageError(f"{one_line(path)}: too large to patch ({now.st_size} bytes)")
            data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UsageError(f"{one_line(path)}: too large to patch (over {MAX_BYTES} bytes)")
    return UserFile(real, data, now)


def replace_user_file(original: UserFile, data: bytes) -> None:
    """Replace ``original``'s contents by ``data`` atomically, keeping its mode and owner.

    The new contents go to an exclusively created temporary file beside the original, which is
    renamed over it only when it is complete and synced; a failure leaves the original as it was
    and removes the temporary file. A symlink put in the original's place since it was read is
    refused, not followed (and a rename would replace a link, never write through it).
    """
    name = original.path.name
    with _folder(original.path.parent) as folder:
        try:
            current = os.stat(name, dir_fd=folder, follow_symlinks=False)
        except OSError as exc:
            raise UsageError(
                f"{one_line(original.path)}: cannot check before writing: {exc.strerror}"
            ) from None
        if not _same_file(original.stat, current) or not _same_contents(original.stat, current):
            raise UsageError(
                f"{one_line(original.path)}: changed while the patch was being made; nothing written"
            )
        temp, fd = _create_temp(folder, name, original.path)
        try:
            with os.fdopen(fd, "wb") as handle:
                _keep_owner_and_mode(handle.fileno(), current)
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
            raise
        with contextlib.suppress(OSError):  # the rename itself survives a crash
            os.fsync(folder)


def create_new_file(folder: Path, names: Iterable[str], data: bytes, mode: int) -> Path:
    """Create the first of ``names`` in ``folder`` that does not exist, holding ``data``.

    Nothing existing is overwritten and no link is followed: a name taken by anything (a
    file, a folder, a symlink, a dangling one too) is skipped. ``mode`` is set exactly,
    whatever the umask. UsageError when every name is taken.
    """
    with _folder(folder) as handle:
        for name in names:
            try:
                fd = os.open(name, _CREATE, 0o600, dir_fd=handle)
            except FileExistsError:
                continue
            except OSError as exc:
                raise UsageError(
                    f"{one_line(folder / name)}: cannot create: {exc.strerror}"
                ) from None
            try:
                with os.fdopen(fd, "wb") as out:
                    os.fchmod(out.fileno(), mode)
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=handle)
                raise
            return folder / name
    raise UsageError(
        f"{one_line(folder)}: every name for the new file is taken; remove old ones first"
    )


_REPORT_HEAD = 4096  # a report's first keys ("version", "status") come in its first bytes


@dataclass(frozen=True)
class RunInput:
    """A file the run reads, and what it is to the run (``the script of this run``)."""

    path: str | Path
    role: str


def check_report_target(
    given: str | Path, inputs: Iterable[RunInput] = (), flag: str = "--report"
) -> None:
    """UsageError (one line) when a report written at ``given`` would replace a file the user
    did not ask to have replaced.

    The file that would be replaced is the one ``given`` resolves to (links followed, as the
    write follows them). It is refused when it is the same file (same device and inode, so a
    hard link or another spelling counts) as one of ``inputs``; when it belongs to another
    user (a link planted in a shared folder); and when it exists, is not empty, and is not a
    diagnose report: ``--report utils.py`` would otherwise replace a module the script
    imports, which no list of inputs can name in advance. An input that does not exist yet
    (``--out model.pt``: the script will write it) is compared by its resolved path. A
    missing path, an empty file and an earlier report pass.
    """
    real = Path(os.path.realpath(given))
    try:
        info: os.stat_result | None = os.stat(real)
    except OSError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        return  # a folder or a stream: the caller decides
    for item in inputs:
        if _same_target(item.path, real, info):
            raise UsageError(
                f"{flag} {one_line(given)}: is {item.role} ({one_line(item.path)}); "
                "the report would overwrite it"
            )
    if info is None:
        return
    refusal = foreign_file(info)
    if refusal is not None:
        raise UsageError(f"{flag} {one_line(given)}: {one_line(real)} {refusal}; not replaced")
    if info.st_size and not _looks_like_report(real):
        raise UsageError(
            f"{flag} {one_line(given)}: {one_line(real)} exists and is not a diagnose report; "
            "not replaced (name a new file, or remove it first)"
        )


def _same_target(path: str | Path, real: Path, info: os.stat_result | None) -> bool:
    """Whether ``path`` names the file at ``real``: the same inode when both exist, else the
    same resolved path (an output the script will write, named before it exists)."""
    try:
        other = os.stat(path)
    except (OSError, ValueError):
        other = None
    if info is not None and other is not None:
        return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)
    try:
        return Path(os.path.realpath(path)) == real
    except (OSError, ValueError):
        return False


def _looks_like_report(path: Path) -> bool:
    """Whether the regular file at ``path`` starts as a report does: ``{"version": ...,
    "status": ...`` (read without blocking, at most its first few KiB)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        head = handle.read(_REPORT_HEAD)
    return head.lstrip().startswith(b"{") and b'"version"' in head and b'"status"' in head


class OutputExists(UsageError):
    """The output's path holds a file already: the caller may ask the user, then replace it."""


def write_output(path: str | Path, data: bytes, *, replace: bool = False) -> Path:
    """Write ``data`` to ``path`` as a new file, or over this user's regular file there when
    ``replace`` (the user said yes); the path written.

    The folder is resolved and held open; the last component is looked at without following
    it. A symlink there (even one to this user's own file) is refused: writing through it
    would change a file the user never named. :class:`OutputExists` when a file is there and
    ``replace`` is False; UsageError for everything else that cannot be written.
    """
    given = Path(path)
    folder = resolve(given.parent if str(given.parent) else ".")
    name = given.name
    if name in ("", ".", ".."):
        raise UsageError(f"{one_line(given)}: not a file name")
    with _folder(folder) as handle:
        try:
            current: os.stat_result | None = os.stat(name, dir_fd=handle, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        except OSError as exc:
            raise UsageError(
                f"{one_line(given)}: cannot check before writing: {exc.strerror}"
            ) from None
        if current is None:
            return create_new_file(folder, [name], data, NEW_FILE_MODE)
        refusal = foreign_file(current)
        if refusal is not None:
            raise UsageError(f"{one_line(given)}: {refusal}; nothing written")
        if not replace:
            raise OutputExists(f"{one_line(given)}: exists; not replaced")
    replace_user_file(UserFile(folder / name, b"", current), data)
    return folder / name


def foreign_file(info: os.stat_result) -> str | None:
    """Why a file diagnose would write over (``lstat`` of it) is not its to replace, or None:
    a symbolic link, something that is not a regular file, or another user's file."""
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link (not followed)"
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({kind_of(info.st_mode)})"
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return f"belongs to another user (uid {info.st_uid})"
    return None


def _read_umask() -> int:
    # Read once, at import: setting the umask to read it would race other threads' files.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_UMASK = _read_umask()
NEW_FILE_MODE = 0o666 & ~_UMASK  # what a plain open() would have given a new file


@contextlib.contextmanager
def _folder(path: Path) -> Iterator[int]:
    """A handle on a folder, so that the steps inside it all see the same folder even if a
    path component is swapped meanwhile."""
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise UsageError(f"{one_line(path)}: cannot open the folder: {exc.strerror}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _check_regular(path: str | Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{one_line(path)}: not a regular file ({kind_of(info.st_mode)})")


def _create_temp(folder: int, name: str, shown_as: Path) -> tuple[str, int]:
    """An exclusively created, unguessable temporary file beside ``name``: (its name, fd)."""
    for _ in range(_TEMP_TRIES):
        temp = f".{name}.{secrets.token_hex(8)}.diagnose-tmp"
        try:
            return temp, os.open(temp, _CREATE, 0o600, dir_fd=folder)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UsageError(
                f"{one_line(shown_as.parent)}: cannot write a temporary file: {exc.strerror}"
            ) from None
    raise UsageError(f"{one_line(shown_as.parent)}: cannot find a free temporary name")


def _keep_owner_and_mode(fd: int, original: os.stat_result) -> None:
    """The original's owner where this process may set it, then its exact mode (chown first:
    it clears set-id bits)."""
    if hasattr(os, "fchown"):
        with contextlib.suppress(OSError):
            os.fchown(fd, original.st_uid, original.st_gid)
    os.fchmod(fd, stat.S_IMODE(original.st_mode))


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) and stat.S_ISREG(b.st_mode)


def _same_contents(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns) == (b.st_size, b.st_mtime_ns)
