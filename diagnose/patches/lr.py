"""lower-learning-rate and raise-learning-rate: change the lr where the run got it
(``patches.lr_size`` sizes it).

The lr can come from a command-line token or a config file the run read (``config.origins``):
the fix is then the command to run instead or a diff of that file. Otherwise it is a literal
in the optimizer call, a module-level constant, an argparse default, or a literal elsewhere in
the script that spells the run's value (``TrainingArguments(learning_rate=...)``).
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.lr_size import (
    candidate_lr,
    lowered_lr,
    raised,
    size_reason,
    user_lr,
    usual_lr,
    zero_lr,
)
from diagnose.patches.registry import patcher
from diagnose.patches.settings import ELSEWHERE, change_setting, origin_of
from diagnose.patches.source import NoPatch, Script, dotted, format_number, number, with_keyword
from diagnose.trainconfig import Origin

# torch's default lr per optimizer (used when the call does not pass one).
DEFAULT_LR = {
    "SGD": 1e-3,
    "Adam": 1e-3,
    "AdamW": 1e-3,
    "RMSprop": 1e-2,
    "Adagrad": 1e-2,
    "Adamax": 2e-3,
    "NAdam": 2e-3,
    "RAdam": 1e-3,
    "Adadelta": 1.0,
    "ASGD": 1e-2,
    "Rprop": 1e-2,
}


@patcher("lower-learning-rate")
def lower_learning_rate(ctx: PatchContext) -> Patched:
    """The patch, with why the new value was chosen (``lr_size.suggest``) in its note."""
    patched = _lower_learning_rate(ctx)
    reason = size_reason(ctx.report)
    if reason and patched.note:
        patched.note = f"{patched.note}. Why this value: {reason}"
    return patched


@patcher("raise-learning-rate")
def raise_learning_rate(ctx: PatchContext) -> Patched:
    """The lr set, where the run got it, to the value ``lr_size.raised`` gives (the place is
    found as lower-learning-rate finds it: each of its writes asks for the candidate)."""
    current = user_lr(ctx.report)
    if current is None and zero_lr(ctx.report):
        current = 0.0
    if current is None:
        raise NoPatch("the run's lr is not known")
    if current <= 0 and usual_lr(ctx.report) is None:
        raise NoPatch("the run's lr is 0, and no usual lr is known for its optimizer: set one")
    suggestion = raised(ctx.report, current)
    try:
        with candidate_lr(suggestion.lr):
            patched = _lower_learning_rate(ctx)
    except NoPatch as exc:
        raise NoPatch(
            f"set the lr to {format_number(suggestion.lr)} where the script sets it ({exc})"
        ) from None
    if patched.note:
        patched.note = f"{patched.note}. Why this value: {suggestion.reason}"
    return patched


def _lower_learning_rate(ctx: PatchContext) -> Patched:
    """Where the run's lr came from when the capture found it outside the script (a flag, a
    config file); else the optimizer call's lr in the script; else a literal that spells it."""
    origin = origin_of(ctx, "lr")
    if origin is not None and origin.kind in ELSEWHERE:
        return _at_origin(ctx, origin)
    made = len(ctx.edits)
    try:
        patched = _in_script(ctx)
    except NoPatch:
        if origin is None:
            raise
        del ctx.edits[made:]  # what the failed try began is not part of the patch
        return _at_origin(ctx, origin)
    if patched.source is None and origin is not None:
        return _at_origin(ctx, origin)
    return patched


def _at_origin(ctx: PatchContext, origin: Origin) -> Patched:
    current = float(origin.value) if isinstance(origin.value, (int, float)) else None
    if current is None:
        raise NoPatch("the lr's origin holds no number")
    return change_setting(ctx, origin, lowered_lr(ctx.report, current), "lr")


def _in_script(ctx: PatchContext) -> Patched:
    script = ctx.script
    calls = script.optimizer_calls()
    if not calls:
        raise NoPatch("no torch.optim optimizer is constructed in the script")
    if len(calls) > 1:
        lines = ", ".join(str(script.line(c)) for c in calls)
        raise NoPatch(
            f"{len(calls)} optimizers are constructed (lines {lines}): "
            "lower the lr of the one that trains the failing model"
        )
    call = calls[0]
    edit = ctx.edit()
    lr_arg = script.keyword(call, "lr")
    if lr_arg is None and len(call.args) > 1 and call.args[1].keyword is None:
        lr_arg = call.args[1]
    if lr_arg is None:
        name = dotted(call.func).split(".")[-1]
        current = ctx.report.config.lr or DEFAULT_LR.get(name)
        if current is None:
            raise NoPatch(f"{name} is built with its default lr, which is not known here")
        new = format_number(lowered_lr(ctx.report, current))
        edit.replace(call, with_keyword(call, "lr", new))
        return Patched(edit.result(), f"{name} used its default lr {current:g}; set lr={new}")
    return _lower_value(ctx, lr_arg.value, edit)


def _lower_value(ctx: PatchContext, value: cst.BaseExpression, edit) -> Patched:
    script = ctx.script
    literal = number(value)
    if literal is not None:
        new = format_number(lowered_lr(ctx.report, literal))
        edit.replace(value, new)
        return Patched(edit.result(), f"lr {literal:g} -> {new} in the optimizer call")
    if isinstance(value, cst.Name):
        assign = script.module_assignment(value.value)
        if assign is None or number(assign.value) is None:
            raise NoPatch(
                f"lr is `{value.value}`, which is not set once to a number at the top of the script"
            )
        old = number(assign.value)
        new = format_number(lowered_lr(ctx.report, old))
        edit.replace(assign.value, new)
        return Patched(edit.result(), f"{value.value} = {old:g} -> {new}")
    if isinstance(value, cst.Attribute):
        return _lower_flag(ctx, value.attr.value, edit)
    raise NoPatch(
        f"lr is computed (`{script.module.code_for_node(value)}`): "
        "divide it by 10 where it is computed"
    )


def _lower_flag(ctx: PatchContext, dest: str, edit) -> Patched:
    """lr comes from an argparse value ``args.<dest>``: the command line or the default."""
    config = ctx.report.config
    given = (config.args_given or {}).get(dest)
    current = (config.args or {}).get(dest, config.lr)
    if given and given != "positional":
        if current is None:
            raise NoPatch(f"lr comes from the {given} flag: run with a value 10x smaller")
        new = format_number(lowered_lr(ctx.report, float(current)))
        return Patched(None, f"lr comes from the {given} flag: run with {given} {new} instead")
    default = _argparse_default(ctx, dest)
    if default is None:
        raise NoPatch(
            f"lr comes from `args.{dest}`, whose default is not a number in the "
            f"script: pass a 10x smaller value on the command line"
        )
    old = number(default.value)
    new = format_number(lowered_lr(ctx.report, old))
    edit.replace(default.value, new)
    return Patched(edit.result(), f"the default of --{dest.replace('_', '-')}: {old:g} -> {new}")


def argparse_default_number(script: Script, dest: str) -> float | None:
    """The numeric ``default=`` of the script's ``add_argument`` for ``dest``."""
    default = argparse_default_arg(script, dest)
    return None if default is None else number(default.value)


def _argparse_default(ctx: PatchContext, dest: str) -> cst.Arg | None:
    return argparse_default_arg(ctx.script, dest)


def argparse_default_arg(script: Script, dest: str) -> cst.Arg | None:
    """The ``default=`` argument of the script's ``add_argument`` for ``dest``, if a number."""
    for call in script.calls("add_argument"):
        options = [
            a.value.evaluated_value
            for a in call.args
            if a.keyword is None and isinstance(a.value, cst.SimpleString)
        ]
        explicit = script.keyword(call, "dest")
        names = {o.lstrip("-").replace("-", "_") for o in options if o.startswith("--")}
        if explicit is not None and isinstance(explicit.value, cst.SimpleString):
            names = {explicit.value.evaluated_value}
        if dest in names:
            default = script.keyword(call, "default")
            if default is not None and number(default.value) is not None:
                return default
    return None
