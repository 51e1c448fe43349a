"""The live objects behind an exception: the user's frames, the modules that were running and
the tensors they held, read from the traceback before the frames are gone.

Everything here reads; nothing calls the user's code.
"""

from __future__ import annotations

import ast
import linecache
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from diagnose.report import Location

_OURS = Path(__file__).resolve().parent.parent


@dataclass
class Scene:
    """The exception, the script, and the frames of its traceback (outermost first)."""

    exc: BaseException
    script: Path
    frames: list[tuple[FrameType, int]] = field(default_factory=list)

    @classmethod
    def of(cls, exc: BaseException, script: Path) -> Scene:
        tb: TracebackType | None = exc.__traceback__
        frames = []
        while tb is not None:
            frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        return cls(exc, script, frames)

    @property
    def message(self) -> str:
        return str(self.exc)

    def user_frames(self) -> list[tuple[FrameType, int]]:
        """The frames of the user's own code (the script and files beside it), outermost first."""
        return [
            (f, line) for f, line in self.frames if is_user_file(f.f_code.co_filename, self.script)
        ]

    def crash_frame(self) -> tuple[FrameType, int] | None:
        """The innermost frame of the user's code: the line the user reads as the crash."""
        frames = self.user_frames()
        return frames[-1] if frames else None

    def module_frames(self) -> list[tuple[Any, FrameType]]:
        """(module, frame) for each nn.Module method running when it raised, outermost first."""
        import torch

        found = []
        for frame, _ in self.frames:
            owner = frame.f_locals.get("self")
            if isinstance(owner, torch.nn.Module) and frame.f_code.co_name not in (
                "_wrapped_call_impl",
                "_call_impl",
            ):
                found.append((owner, frame))
        return found

    def root_call(self) -> tuple[Any, tuple, dict] | None:
        """The outermost module call on the stack with the arguments it was given."""
        import torch

        for frame, _ in self.frames:
            if frame.f_code.co_name == "_call_impl":
                owner = frame.f_locals.get("self")
                if isinstance(owner, torch.nn.Module):
                    args = frame.f_locals.get("args") or ()
                    kwargs = frame.f_locals.get("kwargs") or {}
                    return owner, tuple(args), dict(kwargs)
        return None

    def innermost_local(self, *names: str, kind: type | None = None) -> Any:
        """The first of ``names`` bound in the innermost frame that has one (of ``kind``)."""
        for frame, _ in reversed(self.frames):
            for name in names:
                value = frame.f_locals.get(name)
                if value is not None and (kind is None or isinstance(value, kind)):
                    return value
        return None

    def chain(self) -> list[Location]:
        """The user's frames as locations, outermost (the training loop) first."""
        return [location_of(frame, line) for frame, line in self.user_frames()]


def is_user_file(filename: str, script: Path) -> bool:
    """The script itself, or a file in its folder that is neither installed nor ours."""
    if filename.startswith("<"):
        return False
    try:
        path = Path(filename).resolve()
        mine = script.resolve()
    except OSError:
        return False
    if path == mine:
        return True
    return (
        mine.parent in path.parents
        and "site-packages" not in path.parts
        and _OURS not in path.parents
        and path.name != "runpy.py"
    )


def location_of(frame: FrameType, line: int) -> Location:
    file = frame.f_code.co_filename
    return Location(
        file=file, line=line, function=frame.f_code.co_name, code=source_line(file, line)
    )


def source_line(file: str, line: int) -> str | None:
    text = linecache.getline(file, line).strip()
    return text or None


def statement_at(file: str, line: int) -> tuple[ast.stmt, list[ast.stmt], ast.AST] | None:
    """The innermost statement covering ``line``, the body list holding it, and that body's
    owner (a loop, a function, the module)."""
    tree = parse(file)
    if tree is None:
        return None
    best: tuple[ast.stmt, list[ast.stmt], ast.AST] | None = None

    def visit(owner: ast.AST) -> None:
        nonlocal best
        for name in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(owner, name, None)
            if not isinstance(body, list):
                continue
            for stmt in body:
                if not isinstance(stmt, ast.stmt | ast.excepthandler):
                    continue
                end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
                if stmt.lineno <= line <= end:
                    if isinstance(stmt, ast.stmt):
                        best = (stmt, body, owner)
                    visit(stmt)
        if isinstance(owner, ast.Try | ast.With | ast.For | ast.While | ast.If):
            pass

    visit(tree)
    return best


_PARSED: dict[str, ast.Module | None] = {}


def parse(file: str) -> ast.Module | None:
    if file not in _PARSED:
        source = "".join(linecache.getlines(file))
        try:
            _PARSED[file] = ast.parse(source) if source else None
        except (SyntaxError, ValueError):
            _PARSED[file] = None
    return _PARSED[file]


def module_name(module: Any, roots: list[Any]) -> str:
    """``module``'s name as ``named_modules()`` of a root spells it, or its class name."""
    for root in roots:
        for name, mod in root.named_modules():
            if mod is module:
                return name or type(module).__name__
    return type(module).__name__


def shape(t: Any) -> list[int] | None:
    try:
        return [int(n) for n in t.shape]
    except Exception:
        return None


def shape_text(dims: list[int] | None) -> str:
    return (
        "(" + ", ".join(str(d) for d in dims or []) + ("," if dims and len(dims) == 1 else "") + ")"
    )


def user_line_now(script: Path, skip: int = 1) -> tuple[str, int] | None:
    """The innermost frame of the user's code on the current stack (file, line)."""
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        if is_user_file(frame.f_code.co_filename, script):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None
