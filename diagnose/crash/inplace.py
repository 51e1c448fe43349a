"""inplace-modified-saved-tensor: backward found a tensor it had saved changed in place.

The failing step is run again with ``torch.autograd.detect_anomaly``, which names the forward
op whose backward needed the tensor (its line: the op that *saved* it), and under a
``TorchDispatchMode`` that logs every op with the user's line, the storage it wrote and the
tensors it read: the in-place op that wrote the storage of the saved op's tensor, after it,
is what *modified* it. A ReLU module built with ``inplace=True`` is found by the module that
ran the write.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.crash.live import Scene, is_user_file, module_name, source_line, statement_at
from diagnose.crash.sources import constructors
from diagnose.crash.steps import failing_step
from diagnose.report import Crash, CrashEdit, CrashSite

FAMILY = "inplace-modified-saved-tensor"
_PATTERN = re.compile(r"modified by an inplace operation")
_TENSOR = re.compile(r"\[torch\.\w+ \[([\d, ]*)\]\], which is (output \d+ of (\w+)|a leaf)")
_NODE = re.compile(r"Error detected in (\w+)\.")
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
MAX_OPS = 20000


def matches(message: str) -> bool:
    return bool(_PATTERN.search(message))


@dataclass
class Op:
    """One op of the replay: its name, the user's line, and the storages it read and wrote."""

    name: str
    file: str | None
    line: int | None
    reads: set[int] = field(default_factory=set)
    writes: list[tuple[int, list[int]]] = field(default_factory=list)  # (storage, shape)
    inplace_module: Any = None


def _storage(t: Any) -> int | None:
    try:
        return int(t.untyped_storage().data_ptr())
    except Exception:
        return None


def _user_frame(script: Path) -> tuple[str | None, int | None, Any]:
    """The innermost user line on the stack, and an ``inplace=True`` module running there."""
    import sys

    import torch

    frame = sys._getframe(2)
    module = None
    while frame is not None:
        owner = frame.f_locals.get("self")
        if (
            module is None
            and isinstance(owner, torch.nn.Module)
            and getattr(owner, "inplace", False)
        ):
            module = owner
        if is_user_file(frame.f_code.co_filename, script):
            return frame.f_code.co_filename, frame.f_lineno, module
        frame = frame.f_back
    return None, None, module


def _log_mode(script: Path, ops: list[Op]) -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class OpLog(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if len(ops) < MAX_OPS:
                file, line, module = _user_frame(script)
                op = Op(func.__name__, file, line)
                schema = func._schema.arguments
                for i, arg in enumerate(args):
                    if not isinstance(arg, torch.Tensor):
                        continue
                    ptr = _storage(arg)
                    info = schema[i].alias_info if i < len(schema) else None
                    if info is not None and info.is_write and ptr is not None:
                        op.writes.append((ptr, list(arg.shape)))
                        op.inplace_module = module
                    elif ptr is not None:
                        op.reads.add(ptr)
                for t in out if isinstance(out, tuple | list) else (out,):
                    if isinstance(t, torch.Tensor) and (ptr := _storage(t)) is not None:
                        op.reads.add(ptr)
                ops.append(op)
            return out

    return OpLog()


def explain(scene: Scene) -> Crash:
    import torch

    crash = Crash(family=FAMILY, chain=scene.chain())
    found = _TENSOR.search(scene.message)
    wanted = [int(d) for d in found.group(1).split(",") if d.strip()] if found else None
    if found and found.group(3):
        crash.evidence.append(
            f"backward needed a tensor of shape {tuple(wanted or ())} that {found.group(3)} made, "
            "and it had been changed in place after it was saved"
        )
    at = scene.crash_frame()
    step = failing_step(*at) if at is not None else None
    if step is None:
        crash.checked.append("the line that called backward has no source to replay the step from")
        return crash
    ops: list[Op] = []
    error: BaseException | None = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly(check_nan=False), _log_mode(scene.script, ops):
                exec(step.code, step.names)  # the user's own statements, again
        except Exception as exc:
            error = exc
    if error is None or not _PATTERN.search(str(error)):
        crash.checked.append(
            f"the statements before line {step.line} were run again with anomaly mode: "
            + (
                "backward did not fail this time"
                if error is None
                else f"they raised {type(error).__name__} instead"
            )
        )
        return crash
    saved = _saved_site(scene.script, caught)
    if saved is None:
        crash.checked.append(
            "anomaly mode gave no forward line in the script for the op that saved it"
        )
        return crash
    crash.sites.append(saved)
    modified = _modifier(ops, saved, _node_name(caught), wanted)
    if modified is None:
        crash.checked.append(
            f"no in-place op after line {saved.line} wrote the tensor it saved in the replay"
        )
        return crash
    _modified_site(scene, crash, modified, saved, step.names)
    return crash


def _node_name(caught: list[warnings.WarningMessage]) -> str | None:
    for warning in caught:
        node = _NODE.search(str(warning.message))
        if node is not None:
            return node.group(1)
    return None


def _saved_site(script: Path, caught: list[warnings.WarningMessage]) -> CrashSite | None:
    for warning in caught:
        text = str(warning.message)
        node = _NODE.search(text)
        if node is None:
            continue
        frames = [
            (file, int(line), fn)
            for file, line, fn in _FRAME.findall(text)
            if is_user_file(file, script)
        ]
        if not frames:
            return None
        file, line, fn = frames[-1]
        return CrashSite(
            role="saved",
            file=file,
            line=line,
            function=fn,
            code=source_line(file, line),
            what=f"the forward op whose backward ({node.group(1)}) needs the tensor",
        )
    return None


def _forward_op(node: str) -> str:
    """The aten op a backward node is the gradient of (SigmoidBackward0 -> sigmoid)."""
    base = re.sub(r"Backward\d*$", "", node)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()


def _modifier(
    ops: list[Op], saved: CrashSite, node: str | None, wanted: list[int] | None
) -> Op | None:
    """The first in-place write, after the op that saved the tensor, into what that op read
    or made (of the tensor's shape)."""
    at_line = [i for i, op in enumerate(ops) if op.line == saved.line and op.file == saved.file]
    if not at_line:
        return None
    name = _forward_op(node) if node else None
    exact = [i for i in at_line if name and ops[i].name.split(".")[0] == name]
    savers = exact or at_line
    touched: set[int] = set()
    for i in savers:
        touched |= ops[i].reads
    later = [op for op in ops[savers[0] + 1 :] if op.line is not None]
    for whole in (True, False):  # the tensor itself first, then a view of it (h[:, 0] = 0)
        for op in later:
            for ptr, shape in op.writes:
                if ptr in touched and (wanted is None or not whole or shape == wanted):
                    return op
    return None


def _modified_site(
    scene: Scene, crash: Crash, op: Op, saved: CrashSite, names: dict[str, Any]
) -> None:
    assert op.file is not None and op.line is not None
    what = f"the in-place {op.name.split('.')[0]} that changed it"
    crash.sites.append(
        CrashSite(
            role="modified",
            file=op.file,
            line=op.line,
            code=source_line(op.file, op.line),
            what=what,
        )
    )
    crash.evidence.append(
        f"line {saved.line} saved the tensor for backward; line {op.line} changed it in place "
        f"({op.name.split('.')[0]}) before backward ran"
    )
    if op.inplace_module is not None:
        _inplace_flag(scene, crash, op.inplace_module, names)
        return
    found = statement_at(op.file, op.line)
    if found is None:
        return
    stmt = found[0]
    if isinstance(stmt, ast.AugAssign) and stmt.lineno == op.line:
        crash.edit = CrashEdit(kind="out-of-place", file=op.file, line=op.line)
        return
    for node in ast.walk(stmt):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.endswith("_")
            and not node.func.attr.startswith("_")
            and node.lineno == op.line
        ):
            crash.edit = CrashEdit(
                kind="out-of-place", file=op.file, line=op.line, target=node.func.attr[:-1]
            )
            return
    crash.checked.append(
        f"line {op.line} writes into the tensor without an in-place operator or method "
        "(an indexed assignment): clone the tensor before writing into it"
    )


def _inplace_flag(scene: Scene, crash: Crash, module: Any, names: dict[str, Any]) -> None:
    # the replay's names: a model its statements built again holds the module that wrote
    roots = [v for v in names.values() if _is_module(v)]
    name = module_name(module, roots)
    kind = type(module).__name__
    crash.module, crash.module_type = name, kind
    files = [str(scene.script)] + [loc.file for loc in crash.chain]
    built = [
        b
        for b in constructors(files, kind, [], 0, "inplace", name.rsplit(".", 1)[-1])
        if _true(b.argument)
    ]
    if len(built) != 1:
        crash.checked.append(
            f"{len(built)} {kind}(inplace=True) calls in the script: none is patched"
        )
        return
    site = built[0]
    crash.sites.append(site.site(f"`{name}` is built with inplace=True"))
    crash.edit = CrashEdit(
        kind="inplace-flag", file=site.file, line=site.line, target="inplace", value="False"
    )


def _true(node: Any) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_module(value: Any) -> bool:
    import torch

    return isinstance(value, torch.nn.Module)
