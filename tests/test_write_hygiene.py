"""Every file diagnose writes goes through a writer that decides how, in one place.

User-visible files (reports, exports, mined skeletons, the user's script) are written by
``diagnose/userwrite.py`` and ``diagnose/atomic.py``, which never follow a link they were not
meant to, never replace another user's file and never leave half a file. Diagnose's own
private files (the records cache, a verification's temporary copy of the script's folder) are
written where only diagnose writes. A write anywhere else is a place someone forgot: this test
reads the source and names it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WRITERS = {
    "diagnose/userwrite.py": "the writer of the user's files",
    "diagnose/atomic.py": "the report writer",
    "diagnose/records/cache.py": "diagnose's own records cache folder",
    "diagnose/records/split.py": "entries of the records cache, built beside it",
    "diagnose/verify_tree.py": "a verification's private temporary folder (mkdtemp)",
    "diagnose/cli.py": "stdout re-pointed at os.devnull when it was closed",
    "diagnose/matching/index.py": "diagnose's own match index in its cache folder",
    "diagnose/distributed/elastic.py": "the error file torchrun names, created exclusively",
}
_WRITE_METHODS = {
    "write_text",
    "write_bytes",
    "rename",
    "replace",
    "symlink_to",
    "hardlink_to",
    "touch",
}
_OS_WRITES = {"replace", "rename", "link", "symlink", "truncate", "mkfifo"}
_SHUTIL = {"copy", "copy2", "copyfile", "copytree", "move"}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _writes(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each call in ``tree`` that can create or change a file."""
    calls = (node for node in ast.walk(tree) if isinstance(node, ast.Call))
    return sorted((node.lineno, what) for node in calls if (what := _write_of(node)))


def _mode(node: ast.Call, position: int) -> str:
    mode = node.args[position] if len(node.args) > position else None
    mode = mode or next((k.value for k in node.keywords if k.arg == "mode"), None)
    return str(mode.value) if isinstance(mode, ast.Constant) else ""


def _write_of(node: ast.Call) -> str | None:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    owner = getattr(func.value, "id", "") if isinstance(func, ast.Attribute) else ""
    if name == "open":
        return _open_write(node, owner)
    if owner == "os":
        return f"os.{name}" if name in _OS_WRITES else None
    if owner == "shutil":
        return f"shutil.{name}" if name in _SHUTIL else None
    if owner == "tempfile":
        return f"tempfile.{name}" if name in ("mkstemp", "NamedTemporaryFile") else None
    if isinstance(func, ast.Attribute) and name in _WRITE_METHODS and owner not in ("re", "str"):
        # str.replace(old, new) takes two arguments; Path.replace(target) one
        return None if name == "replace" and len(node.args) != 1 else f".{name}()"
    return None


def _open_write(node: ast.Call, owner: str) -> str | None:
    if owner == "os":
        flags = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)} & _WRITE_FLAGS
        return f"os.open with {sorted(flags)}" if flags else None
    mode = _mode(node, 1 if owner in ("", "io", "builtins", "codecs") else 0)
    return f"open(..., {mode!r})" if set(mode) & set("wax+") else None


def test_every_write_of_a_file_is_in_one_of_the_writers():
    stray = []
    for path in sorted(
        [*ROOT.joinpath("diagnose").rglob("*.py"), *ROOT.joinpath("tui").rglob("*.py")]
    ):
        rel = path.relative_to(ROOT).as_posix()
        if rel in WRITERS:
            continue
        for line, what in _writes(ast.parse(path.read_text(encoding="utf-8"))):
            stray.append(f"{rel}:{line}: {what}")
    assert not stray, (
        "files written outside the writers (route them through userwrite):\n" + "\n".join(stray)
    )


def test_the_scan_sees_each_kind_of_write():
    code = (
        "open(p, 'w')\nPath(p).write_text(t)\nos.replace(a, b)\nshutil.copy(a, b)\n"
        "p.open('a')\nos.open(p, os.O_WRONLY | os.O_CREAT)\np.replace(q)\ntempfile.mkstemp()\n"
        "open(p)\ns.replace('a', 'b')\nos.open(p, os.O_RDONLY)\n"
    )
    assert [line for line, _ in _writes(ast.parse(code))] == [1, 2, 3, 4, 5, 6, 7, 8]
