"""graph-cut-before-backward: the tensor given to backward has no grad_fn.

Followed back from the backward call through the user's own assignments (in the frame that
called backward, up to a few steps): the first statement that makes the loss, or a tensor it
is made from, without a graph (a no_grad block, ``.detach()``, ``.item()``, ``.numpy()``,
``torch.tensor(...)`` of a result, ``.data``) is the cut. When the model's output itself has
no graph, its parameters (``requires_grad=False``) and its forward's source are read.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
from collections.abc import Callable
from types import FrameType
from typing import Any

from diagnose.crash.flow import backward_receiver
from diagnose.crash.live import Scene, parse, source_line, statement_at
from diagnose.crash.origin import assignment_line
from diagnose.report import Crash, CrashSite

FAMILY = "graph-cut-before-backward"
_PATTERN = re.compile(r"element 0 of tensors does not require grad and does not have a grad_fn")
_CUT_METHODS = {"detach", "item", "numpy", "tolist", "detach_", "cpu().numpy"}
_CUT_CALLS = {"tensor", "as_tensor", "from_numpy", "float", "array"}
_NO_GRAD = {"no_grad", "inference_mode"}
_LIBRARIES = {"torch", "np", "numpy", "math", "nn", "F"}
_FREEZE = re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*False\s*\)")
MAX_HOPS = 8


def matches(message: str) -> bool:
    return bool(_PATTERN.search(message))


def _marker(node: ast.AST, live: Callable[[str], bool] = lambda name: True) -> str | None:
    """What in an expression makes a tensor without a graph, in words. A marker counts only
    when it works on something ``live`` says held a tensor or a model (``torch.tensor([0, 1])``
    of constants cuts nothing)."""
    for n in ast.walk(node):
        found = None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in _CUT_METHODS:
                found = f".{n.func.attr}()"
            elif n.func.attr in _CUT_CALLS and isinstance(n.func.value, ast.Name):
                found = f"{n.func.value.id}.{n.func.attr}(...)"
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _CUT_CALLS:
            found = f"{n.func.id}(...)"
        elif isinstance(n, ast.Attribute) and n.attr == "data":
            found = ".data"
        if found is not None and any(isinstance(m, ast.Name) and live(m.id) for m in ast.walk(n)):
            return found
    return None


def _no_grad_block(file: str, line: int) -> int | None:
    """The line of a ``with torch.no_grad()`` (or inference_mode) block around ``line``."""
    tree = parse(file)
    if tree is None:
        return None
    best = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.With) or not (node.lineno <= line <= (node.end_lineno or 0)):
            continue
        for item in node.items:
            call = item.context_expr
            func = call.func if isinstance(call, ast.Call) else call
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _NO_GRAD:
                best = node.lineno
    return best


def _has_graph(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and value.requires_grad


def explain(scene: Scene) -> Crash:
    crash = Crash(family=FAMILY, chain=scene.chain())
    at = scene.crash_frame()
    if at is None:
        crash.checked.append("backward was not called from the user's code")
        return crash
    frame, line = at
    file = frame.f_code.co_filename
    found = statement_at(file, line)
    name = backward_receiver(found[0]) if found else None
    if name is None:
        crash.checked.append(f"line {line} calls backward on no plain name to follow back")
        return crash
    block = _no_grad_block(file, line)
    if block is not None:
        _cut_at(crash, file, block, "backward itself runs inside a no_grad block")
        return crash
    if not _follow(crash, frame, name, line):
        crash.checked.append(
            f"followed `{name}` back through the assignments before line {line}: no no_grad "
            "block, .detach(), .item(), .numpy() or torch.tensor(...) found on the way"
        )
    return crash


def _follow(crash: Crash, frame: FrameType, name: str, line: int) -> bool:
    """Follow ``name`` back through its assignments in ``frame`` until a cut is found."""
    file = frame.f_code.co_filename
    queue, seen = [(name, line)], set()
    for _ in range(MAX_HOPS):
        if not queue:
            break
        name, before = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        made = assignment_line(frame, name, before - 1 if before == line else before)
        stmt = statement_at(file, made) if made is not None else None
        if made is None or stmt is None:
            continue
        if (block := _no_grad_block(file, made)) is not None:
            _cut_at(
                crash, file, made, f"`{name}` is computed inside the no_grad block of line {block}"
            )
            return True
        marker = _marker(stmt[0], lambda n: _is_tensor_or_model(frame.f_locals.get(n)))
        if marker is not None:
            _cut_at(crash, file, made, f"{marker} makes `{name}` a tensor with no graph")
            return True
        for read in _loads(stmt[0]):
            value = frame.f_locals.get(read)
            if _module_without_graph(crash, read, value, file, made):
                return True
            if read != name and not _has_graph(value) and _is_tensor(value):
                queue.append((read, made))
    return False


def _loads(stmt: ast.stmt) -> list[str]:
    value = getattr(stmt, "value", stmt)
    return list(
        dict.fromkeys(
            n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        )
    )


def _is_tensor_or_model(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor | torch.nn.Module)


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _module_without_graph(crash: Crash, name: str, value: Any, file: str, line: int) -> bool:
    """A model called on this line whose parameters do not require grad, or whose forward
    cuts its own output: the cut named there."""
    import torch

    if not isinstance(value, torch.nn.Module):
        return False
    params = list(value.parameters())
    if params and not any(p.requires_grad for p in params):
        crash.module, crash.module_type = name, type(value).__name__
        crash.sites.append(
            CrashSite(
                role="cut",
                file=file,
                line=line,
                code=source_line(file, line),
                what=f"`{name}`'s parameters all have requires_grad=False",
            )
        )
        crash.evidence.append(
            f"every parameter of `{name}` ({type(value).__name__}) has requires_grad=False: "
            "nothing in its output can have a gradient"
        )
        for at, text in enumerate(linecache.getlines(file), 1):
            if _FREEZE.search(text) and not text.lstrip().startswith("#"):
                crash.sites.append(
                    CrashSite(
                        role="cut",
                        file=file,
                        line=at,
                        code=text.strip(),
                        what="the parameters are frozen here",
                    )
                )
        return True
    try:
        lines, start = inspect.getsourcelines(type(value).forward)
        source_file = inspect.getsourcefile(type(value).forward)
    except (OSError, TypeError):
        return False
    if source_file is None or "site-packages" in source_file:
        return False
    for offset, text in enumerate(lines):
        try:
            node = ast.parse(text.strip())
        except SyntaxError:
            continue
        marker = _marker(node, lambda n: n not in _LIBRARIES)
        if marker is not None:
            crash.module, crash.module_type = name, type(value).__name__
            _cut_at(
                crash,
                source_file,
                start + offset,
                f"{marker} in {type(value).__name__}.forward cuts the model's output from its parameters",
            )
            return True
    return False


def _cut_at(crash: Crash, file: str, line: int, what: str) -> None:
    crash.sites.append(
        CrashSite(role="cut", file=file, line=line, code=source_line(file, line), what=what)
    )
    if not crash.evidence:
        crash.evidence.append(
            "the tensor given to backward has no grad_fn: the graph from the parameters to it "
            "was cut on the way, so backward has nothing to go back through"
        )
