"""The text files the run read: where a setting's value may have been written.

A setting can come from a file the script opened itself (a YAML/JSON/TOML config, a Python
configurator run with ``exec(open(...).read())``, a file a config library loads). Every such
open goes through Python's ``open`` audit event, so one audit hook sees them all, whatever
library reads them, without wrapping any function. An audit hook cannot be removed, so one
hook is installed per process, the first time a watcher needs it, and hands each open to the
watchers installed at that moment: a process that traces many runs (a notebook, a sweep, a
test suite) keeps one hook, which returns at once when no watcher is installed.

Only small text files outside Python's own installation are kept (libraries' own files are
not where a user writes a setting), at most ``MAX_FILES`` of them, first read first; the source
files of imported modules are left out (the user's own modules are read apart, for the defaults
a command-line token replaced: ``capture.origins``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

MAX_FILES = 64
SUFFIXES = frozenset({".py", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf"})


_INSTALLED: list[FileReadWatcher] = []  # the watchers recording now
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    """The process's one hook: each ``open`` to the watchers recording now."""
    if event != "open" or not _INSTALLED:
        return
    for watcher in tuple(_INSTALLED):
        watcher.opened(args)


class FileReadWatcher:
    """Records the resolved paths of the config-like files opened for reading."""

    def __init__(self) -> None:
        self._paths: dict[str, None] = {}
        self._skip = tuple(installation_roots())

    def install(self) -> None:
        global _HOOKED
        if self not in _INSTALLED:
            _INSTALLED.append(self)
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED = True

    def uninstall(self) -> None:
        if self in _INSTALLED:
            _INSTALLED.remove(self)

    def opened(self, args: tuple) -> None:
        """An ``open`` audit event's arguments: the path and mode."""
        if len(self._paths) >= MAX_FILES or not args:
            return
        path, mode = args[0], args[1] if len(args) > 1 else "r"
        if not isinstance(path, str) or (isinstance(mode, str) and set(mode) & set("wax+")):
            return
        if os.path.splitext(path)[1].lower() not in SUFFIXES:
            return
        full = os.path.abspath(path)
        if not full.startswith(self._skip):
            self._paths.setdefault(full, None)

    def paths(self) -> list[Path]:
        """The files read, first read first: diagnose's own files and the source of imported
        modules left out (an import opens its file as any read does; a module is code, and
        a configurator run with ``exec`` is not imported)."""
        own = str(Path(__file__).resolve().parent.parent)
        imported = set(imported_module_files())
        return [
            Path(p) for p in self._paths if not p.startswith(own + os.sep) and p not in imported
        ]


def imported_module_files() -> list[str]:
    """The absolute source (or compiled) file of every imported module that has one."""
    files = []
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if isinstance(name, str):
            files.append(os.path.abspath(name))
    return files


def installation_roots() -> list[str]:
    """The folders Python and its installed packages live in (each ending in a separator)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            roots.add(sysconfig.get_path(key))
        except KeyError:
            continue
    return [os.path.join(os.path.abspath(r), "") for r in roots if r]
