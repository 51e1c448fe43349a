"""Patches for a crash the live run explained: each writes the one change ``event.crash.edit``
names, at the line the run found, and nothing else.

The edit says what to change (an argument of a constructor, an in-place statement, the use of
a carried tensor, a cast); the source at that line must still read as the run saw it, or
there is no patch.
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from diagnose.crash.sources import literal_int
from diagnose.patches.context import PatchContext, Patched, same_file
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of, dotted
from diagnose.report import CrashEdit

# The constructor parameters of each layer kind, in order (their positions).
PARAMETERS = {
    "Linear": ("in_features", "out_features"),
    "Bilinear": ("in1_features", "in2_features", "out_features"),
    "Conv1d": ("in_channels", "out_channels"),
    "Conv2d": ("in_channels", "out_channels"),
    "Conv3d": ("in_channels", "out_channels"),
    "BatchNorm1d": ("num_features",),
    "BatchNorm2d": ("num_features",),
    "BatchNorm3d": ("num_features",),
    "LayerNorm": ("normalized_shape",),
}


def crash_edit(ctx: PatchContext, kind: str | tuple[str, ...]) -> CrashEdit:
    """The run's edit of ``kind``, in this script; NoPatch saying why there is none."""
    event = ctx.report.event
    crash = getattr(event, "crash", None) if event is not None else None
    edit = crash.edit if crash is not None else None
    kinds = (kind,) if isinstance(kind, str) else kind
    if edit is None or edit.kind not in kinds:
        raise NoPatch("the run did not show one change that fixes it: apply the example by hand")
    ran = ctx.report.script.path if ctx.report.script is not None else None
    # the script the run ran, or the copy of it being patched (`diagnose apply` to a copy)
    if not same_file(edit.file, ctx.path) and not (ran and same_file(edit.file, Path(ran))):
        raise NoPatch(f"the line to change is {edit.file}:{edit.line}, not in the script")
    return edit


def _last_name(call: cst.Call) -> str | None:
    return (dotted(call.func) or "").rsplit(".", 1)[-1] or None


def _agrees(ctx: PatchContext, call: cst.Call, params: tuple[str, ...], sizes: dict) -> bool:
    """Every literal size the call passes is the module's (of two convs on one line, the one
    the run met)."""
    for at, name in enumerate(params):
        given = ctx.script.argument(call, at, name)
        if given is None or name not in sizes:
            continue
        try:
            value = literal_int(ast.parse(code_of(given), mode="eval").body)
        except SyntaxError:
            value = None
        if value is not None and value != sizes[name]:
            return False
    return True


@patcher("fix-layer-size")
def fix_layer_size(ctx: PatchContext) -> Patched:
    edit = crash_edit(ctx, "layer-size")
    crash = ctx.report.event.crash  # type: ignore[union-attr]
    kind = crash.module_type or ""
    params = PARAMETERS.get(kind)
    if params is None or edit.target not in params or not edit.value:
        raise NoPatch(f"no size of a {kind} to set")
    calls = [
        c
        for c in ctx.script.on_line(edit.line, cst.Call)
        if _last_name(c) == kind and _agrees(ctx, c, params, crash.sizes)
    ]
    if len(calls) != 1:
        raise NoPatch(f"line {edit.line} does not hold one {kind}(...) call")
    call = calls[0]
    value = ctx.script.argument(call, params.index(edit.target), edit.target)
    if value is None:
        raise NoPatch(f"the {kind}(...) on line {edit.line} does not pass {edit.target}")
    change = ctx.edit()
    change.replace(value, edit.value)
    return Patched(
        change.result(),
        f"{edit.target}={edit.value} on line {edit.line}: the size `{crash.module}` gets in the run",
    )


# In-place tensor methods and their out-of-place forms (x.relu_() -> x.relu()).
def _out_of_place(method: str) -> str | None:
    if method.endswith("_") and not method.startswith("_") and method not in ("requires_grad_",):
        return method[:-1]
    return None


def _statement_at(ctx: PatchContext, line: int) -> cst.BaseSmallStatement:
    found = [
        s for s in ctx.script.on_line(line, cst.BaseSmallStatement) if ctx.script.line(s) == line
    ]
    if not found:
        raise NoPatch(f"no statement starts on line {line}")
    return found[0]


@patcher("make-op-out-of-place")
def make_op_out_of_place(ctx: PatchContext) -> Patched:
    edit = crash_edit(ctx, ("out-of-place", "inplace-flag"))
    change = ctx.edit()
    if edit.kind == "inplace-flag":
        flags = [
            kw
            for call in ctx.script.on_line(edit.line, cst.Call)
            if (kw := ctx.script.keyword(call, "inplace")) is not None
        ]
        if len(flags) != 1:
            raise NoPatch(f"line {edit.line} does not hold one inplace=... argument")
        change.replace(flags[0].value, "False")
        return Patched(change.result(), f"inplace=False on line {edit.line}")
    stmt = _statement_at(ctx, edit.line)
    if isinstance(stmt, cst.AugAssign):
        target = cst.Module([]).code_for_node(stmt.target)
        op = stmt.operator.__class__.__name__
        symbol = _AUG.get(op)
        if symbol is None:
            raise NoPatch(f"line {edit.line}: an augmented assignment this patch does not write")
        value = cst.Module([]).code_for_node(stmt.value)
        written = f"({value})" if _compound(stmt.value) else value
        change.replace(stmt, _small(f"{target} = {target} {symbol} {written}"))
        return Patched(
            change.result(),
            f"line {edit.line} writes a new tensor instead of changing {target} in place",
        )
    calls = [
        c
        for c in ctx.script.on_line(edit.line, cst.Call)
        if isinstance(c.func, cst.Attribute) and _out_of_place(c.func.attr.value) == edit.target
    ]
    if len(calls) != 1:
        raise NoPatch(f"line {edit.line} does not hold one .{edit.target}_() call")
    call = calls[0]
    func = call.func
    assert isinstance(func, cst.Attribute)
    new_call = call.with_changes(func=func.with_changes(attr=cst.Name(edit.target or "")))
    if isinstance(stmt, cst.Expr) and stmt.value is call:
        receiver = cst.Module([]).code_for_node(func.value)
        change.replace(stmt, _small(f"{receiver} = {cst.Module([]).code_for_node(new_call)}"))
    else:
        change.replace(call, new_call)
    return Patched(
        change.result(), f"line {edit.line} calls .{edit.target}() instead of .{edit.target}_()"
    )


_AUG = {
    "AddAssign": "+",
    "SubtractAssign": "-",
    "MultiplyAssign": "*",
    "DivideAssign": "/",
    "PowerAssign": "**",
    "FloorDivideAssign": "//",
    "MatrixMultiplyAssign": "@",
}


def _small(code: str) -> cst.BaseSmallStatement:
    line = cst.parse_statement(code)
    assert isinstance(line, cst.SimpleStatementLine)
    return line.body[0]


def _compound(value: cst.BaseExpression) -> bool:
    return isinstance(
        value, cst.BinaryOperation | cst.BooleanOperation | cst.Comparison | cst.IfExp
    )


def _reads(ctx: PatchContext, line: int, name: str) -> list[cst.Name]:
    """The reads of ``name`` among the arguments of the calls on ``line``."""
    found = []
    for call in ctx.script.on_line(line, cst.Call):
        for arg in call.args:
            if isinstance(arg.value, cst.Name) and arg.value.value == name:
                found.append(arg.value)
    return found


@patcher("detach-carried-state")
def detach_carried_state(ctx: PatchContext) -> Patched:
    edit = crash_edit(ctx, "detach")
    name = edit.target or ""
    reads = _reads(ctx, edit.line, name)
    if len(reads) != 1:
        raise NoPatch(f"line {edit.line} does not pass `{name}` to one call")
    change = ctx.edit()
    detached = f"tuple(s.detach() for s in {name})" if edit.value == "tuple" else f"{name}.detach()"
    change.replace(reads[0], detached)
    return Patched(
        change.result(),
        f"line {edit.line} passes {detached}: the value goes on, the last step's graph does not",
    )


@patcher("cast-dtype")
def cast_dtype(ctx: PatchContext) -> Patched:
    edit = crash_edit(ctx, "cast")
    expr = edit.target or ""
    args = [
        arg.value
        for call in ctx.script.on_line(edit.line, cst.Call)
        for arg in call.args
        if _same_code(arg.value, expr)
    ]
    if len(args) != 1 or not edit.value:
        raise NoPatch(f"line {edit.line} does not pass `{expr}` to one call")
    change = ctx.edit()
    change.replace(args[0], f"{expr}.{edit.value}()")
    return Patched(change.result(), f"line {edit.line} passes {expr}.{edit.value}()")


def _same_code(node: cst.BaseExpression, expr: str) -> bool:
    try:
        return ast.unparse(ast.parse(code_of(node), mode="eval")) == expr
    except SyntaxError:
        return False
