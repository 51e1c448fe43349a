"""Where a tensor the crash involved came from: the user's name for it and the line that made it.

A tensor found in a library frame (the ``target`` of ``cross_entropy``) is looked up by
identity in the user's frames, innermost first; the line is the last assignment of that name
before the frame's current line, read from the source (nothing is re-run).
"""

from __future__ import annotations

import ast
from types import FrameType
from typing import Any

from diagnose.crash.live import Scene, parse, source_line
from diagnose.report import CrashSite


def name_of(scene: Scene, value: Any) -> tuple[str, FrameType, int] | None:
    """The user's local name bound to ``value`` (by identity), with its frame and line."""
    found = names_of(scene, value)
    return found[0] if found else None


def names_of(scene: Scene, value: Any) -> list[tuple[str, FrameType, int]]:
    """Every user frame's local name bound to ``value``, innermost frame first."""
    found = []
    for frame, line in reversed(scene.user_frames()):
        for name, held in frame.f_locals.items():
            if held is value and name != "self":
                found.append((name, frame, line))
                break
    return found


def assignment_line(frame: FrameType, name: str, before: int) -> int | None:
    """The last line at or before ``before`` in ``frame``'s function that binds ``name``."""
    tree = parse(frame.f_code.co_filename)
    if tree is None:
        return None
    first = frame.f_code.co_firstlineno
    best = None
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
            targets = [node.target]
        else:
            continue
        if not (first <= node.lineno <= before):
            continue
        for target in targets:
            binds = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))
            if binds and (best is None or node.lineno > best):
                best = node.lineno
    return best


def origin_site(
    scene: Scene, value: Any, role: str = "producer", what: str | None = None
) -> CrashSite | None:
    """The line that made ``value``, as the user's code names it."""
    for name, frame, line in names_of(scene, value):
        made = assignment_line(frame, name, line)
        if made is None:
            continue  # a parameter of this function: made by its caller
        file = frame.f_code.co_filename
        return CrashSite(
            role=role,
            file=file,
            line=made,
            function=frame.f_code.co_name,
            code=source_line(file, made),
            what=what or f"`{name}` is made here",
        )
    return None
