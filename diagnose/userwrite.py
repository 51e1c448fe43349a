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
  exist yet (a symlink, even a dangling one, counts as existing).

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
