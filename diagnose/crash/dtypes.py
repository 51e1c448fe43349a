"""dtype-mismatch: a tensor of the wrong dtype reached a layer or a loss.

The tensor is read from the frame that raised (the ``target`` of a loss, the ``input`` of an
embedding or a layer), its dtype compared with what the op needs (long class targets and
indices; the layer's weight dtype for an input), and its name found in the user's frame
that passed it, so that the cast goes there.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from diagnose.crash.live import Scene, module_name, source_line, statement_at
from diagnose.crash.origin import assignment_line, name_of, origin_site
from diagnose.report import Crash, CrashEdit, CrashSite

FAMILY = "dtype-mismatch"
_PATTERNS = [
    re.compile(r"expected target dtype to be Long"),
    re.compile(r"expected scalar type (\w+) but found (\w+)"),
    re.compile(r"'indices' to have one of the following scalar types"),
    re.compile(r"must have the same dtype"),
    re.compile(r"Input type \(\w+\) and (bias|weight) type \(\w+\) should be the same"),
    re.compile(r"Found dtype \w+ but expected \w+"),
    re.compile(r"expected m1 and m2 to have the same dtype"),
    re.compile(r"\"\w+\" not implemented for '(Float|Double|Half|Long|Int)'"),
    re.compile(r"result type Float can't be cast to the desired output type \w+"),
]
_METHOD = {
    "torch.float32": "float",
    "torch.float64": "double",
    "torch.float16": "half",
    "torch.bfloat16": "bfloat16",
    "torch.int64": "long",
}


def matches(message: str) -> bool:
    return any(p.search(message) for p in _PATTERNS)


def _wanted(scene: Scene) -> tuple[Any, str, str, Any] | None:
    """(the tensor, the dtype it needs, what it is, the module) from the frames that raised."""
    import torch

    message = scene.message
    for module, frame in reversed(scene.module_frames()):
        tensor = frame.f_locals.get("input")
        if not isinstance(tensor, torch.Tensor):
            continue
        if isinstance(module, torch.nn.Embedding):
            if tensor.is_floating_point():
                return tensor, "torch.int64", "the embedding's indices", module
            continue
        weight = getattr(module, "weight", None)
        if isinstance(weight, torch.Tensor) and weight.dtype != tensor.dtype:
            return tensor, str(weight.dtype), f"the input of {type(module).__name__}", module
    target = scene.innermost_local("target", kind=torch.Tensor)
    if (
        target is not None
        and target.is_floating_point()
        and ("target dtype" in message or "Long" in message)
    ):
        return target, "torch.int64", "the class targets", None
    if target is not None and not target.is_floating_point() and "can't be cast" in message:
        return target, "torch.float32", "the targets of a loss on probabilities", None
    indices = scene.innermost_local("indices", "input", kind=torch.Tensor)
    if indices is not None and "indices" in message and indices.is_floating_point():
        return indices, "torch.int64", "the indices", None
    return None


def explain(scene: Scene) -> Crash:
    crash = Crash(family=FAMILY, chain=scene.chain())
    found = _wanted(scene)
    if found is None:
        crash.checked.append("no tensor on the stack has another dtype than its op needs")
        return crash
    tensor, dtype, what, module = found
    if module is not None:
        root = scene.root_call()
        crash.module = module_name(module, [root[0]] if root else [])
        crash.module_type = type(module).__name__
    crash.input_shape = [int(d) for d in tensor.shape]
    crash.evidence.append(
        f"{what}: {str(tensor.dtype).removeprefix('torch.')}, where the op needs "
        f"{dtype.removeprefix('torch.')}"
        + (
            f" (the dtype of `{crash.module}`'s weight)"
            if module is not None and dtype != "torch.int64"
            else ""
        )
    )
    made = origin_site(scene, tensor, what=f"{what}: made here")
    passed = _passed(scene, tensor)
    if passed is None:
        crash.checked.append(f"{what} are passed by no plain name or index in the user's code")
        if made is not None:
            crash.sites.append(made)
        return crash
    expr, frame, line, base = passed
    file = frame.f_code.co_filename
    if made is None and base is not None:
        at = assignment_line(frame, base, line)
        if at is not None and at != line:
            made = CrashSite(
                role="producer",
                file=file,
                line=at,
                code=source_line(file, at),
                what=f"{what}: made here",
            )
    if made is not None and made.line != line:
        crash.sites.append(made)
    crash.sites.append(
        CrashSite(
            role="crash",
            file=file,
            line=line,
            function=frame.f_code.co_name,
            code=source_line(file, line),
            what=f"`{expr}` is passed here",
        )
    )
    method = _METHOD.get(dtype)
    if method is not None:
        crash.edit = CrashEdit(kind="cast", file=file, line=line, target=expr, value=method)
    return crash


def _plain(node: ast.AST) -> bool:
    """A name, an attribute or an index of plain parts: safe to read again (no calls)."""
    return all(
        isinstance(
            n,
            ast.Name
            | ast.Attribute
            | ast.Subscript
            | ast.Slice
            | ast.Constant
            | ast.Load
            | ast.Tuple
            | ast.UnaryOp
            | ast.USub,
        )
        for n in ast.walk(node)
    )


def _passed(scene: Scene, tensor: Any) -> tuple[str, Any, int, str | None] | None:
    """How the user's frame passed ``tensor`` to the call that raised: the argument's source
    (``y``, ``labels[batch]``), its frame and line, and the name it is read from."""
    import torch

    named = name_of(scene, tensor)
    if named is not None:
        name, frame, line = named
        return name, frame, line, name
    at = scene.crash_frame()
    if at is None:
        return None
    frame, line = at
    found = statement_at(frame.f_code.co_filename, line)
    if found is None:
        return None
    for node in ast.walk(found[0]):
        if not isinstance(node, ast.Call):
            continue
        for arg in node.args:
            if not _plain(arg) or isinstance(arg, ast.Name):
                continue
            bases = [n.id for n in ast.walk(arg) if isinstance(n, ast.Name)]
            held = frame.f_locals.get(bases[0], frame.f_globals.get(bases[0])) if bases else None
            if not isinstance(held, torch.Tensor):
                continue  # indexing anything else may run the user's own __getitem__
            try:
                value = eval(
                    compile(ast.Expression(arg), "<arg>", "eval"),
                    frame.f_globals,
                    dict(frame.f_locals),
                )
            except Exception:
                continue
            same = (
                isinstance(value, torch.Tensor)
                and value.shape == tensor.shape
                and value.dtype == tensor.dtype
                and bool(torch.equal(value, tensor))
            )
            if same:
                base = next((n.id for n in ast.walk(arg) if isinstance(n, ast.Name)), None)
                return ast.unparse(arg), frame, line, base
    return None
