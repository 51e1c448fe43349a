"""lower-weight-decay: the weight decay set where the run got it, to a size that trains.

The decay comes from a command-line token or a config file the run read (``config.origins``),
from the ``weight_decay=`` of the script's optimizer call (a literal, a module constant, an
argparse default), or, under transformers' Trainer, from its ``TrainingArguments``.
"""

from __future__ import annotations

import math

import libcst as cst

from diagnose.capture.origins import KEYS
from diagnose.learning.findings import ADAPTIVE, decay_lr
from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.lr import argparse_default_arg
from diagnose.patches.lr_size import script_flag_default
from diagnose.patches.registry import patcher
from diagnose.patches.settings import ELSEWHERE, change_setting, origin_of, token_words
from diagnose.patches.source import NoPatch, format_number, number
from diagnose.patches.trainer_settings import add_training_argument
from diagnose.patches.values import literal_behind
from diagnose.trainconfig import Origin

# the share of a weight's size the decay may take off per step (torch's AdamW defaults: 1e-5)
TARGET_SHARE = 1e-4


def _decay_sizes(ctx: PatchContext) -> tuple[float, float, float]:
    """(the run's largest weight decay, the value to set, the most a value may be and still
    take ``TARGET_SHARE`` or less of a weight per step). The value to set brings lr x
    weight_decay down to ``TARGET_SHARE`` per step, at least tenfold lower; a coupled decay
    under an adaptive optimizer goes a hundredfold lower, to at most ``TARGET_SHARE``."""
    best: tuple[float, float, float] | None = None
    for optimizer in ctx.report.config.optimizers or []:
        for group in optimizer.param_groups or []:
            wd, lr = group.weight_decay, decay_lr(group, ctx.report)
            if not _positive(wd) or lr is None:
                continue
            decoupled = optimizer.name == "AdamW" or (group.model_extra or {}).get(
                "decoupled_weight_decay"
            )
            if decoupled or optimizer.name not in ADAPTIVE:
                new, most = min(wd / 10, TARGET_SHARE / lr), TARGET_SHARE / lr
            else:
                new, most = min(wd / 100, TARGET_SHARE), TARGET_SHARE
            if best is None or wd > best[0]:
                best = (float(wd), float(f"{new:.1g}"), most)
    if best is None:
        raise NoPatch("the run's weight decay is not known")
    return best


def _replaced_value(
    ctx: PatchContext, origin: Origin, current: float, most: float
) -> tuple[float, str | None] | None:
    """The decay a command-line token replaced and where it is set (a file's line, or the
    script's default of the flag), when it is small enough to train: going back to it undoes
    only what the token changed."""
    if origin.kind != "argv":
        return None
    # the script's own default of the flag is exactly what the token replaced
    replaced, where = _flag_default(ctx, current)
    if not _positive(replaced):
        replaced, where = origin.overrides, f"what {origin.overrides_at} sets"
    if not _positive(replaced) or replaced > current / 10 or replaced > most * (1 + 1e-9):
        return None
    return float(replaced), where


def _flag_default(ctx: PatchContext, current: float) -> tuple[float | None, str | None]:
    """The script's argparse default of the decay flag the command line gave ``current``."""
    config = ctx.report.config
    args = config.args or {}
    for dest, option in (config.args_given or {}).items():
        value = args.get(dest)
        if option == "positional" or not KEYS["weight_decay"].match(dest.lower()):
            continue
        if _positive(value) and math.isclose(float(value), current, rel_tol=1e-9):
            default = script_flag_default(ctx.report.script.path, dest)
            return default, f"the script's default of {option}"
    return None, None


@patcher("lower-weight-decay")
def lower_weight_decay(ctx: PatchContext) -> Patched:
    current, new, most = _decay_sizes(ctx)
    origin = origin_of(ctx, "weight_decay")
    if origin is not None and origin.kind in ELSEWHERE:
        replaced = _replaced_value(ctx, origin, current, most)
        if replaced is None:
            return change_setting(ctx, origin, new, "weight_decay")
        value, where = replaced
        patched = change_setting(ctx, origin, value, "weight_decay")
        patched.note = (
            f"{patched.note}. Why this value: {format_number(value)} is {where}, "
            f"which {token_words(list(ctx.report.script.argv), origin.index or 0)} replaced: "
            "go back to it"
        )
        return patched
    script = ctx.script
    calls = script.optimizer_calls()
    if not calls and ctx.report.config.transformers is not None:
        return add_training_argument(ctx, "weight_decay", new)
    edit = ctx.edit()
    changed = []
    for call in calls:
        arg = script.keyword(call, "weight_decay")
        if arg is None:
            continue
        target, where = _number_node(ctx, arg.value)
        if target is not None and math.isclose(number(target) or 0.0, current, rel_tol=1e-6):
            edit.replace(target, format_number(new))
            changed.append(where or f"the optimizer call on line {script.line(call)}")
    if not changed:
        raise NoPatch(
            f"no optimizer call in the script sets weight_decay={format_number(current)}: "
            f"set it to {format_number(new)} where it is set"
        )
    return Patched(
        edit.result(),
        f"weight_decay {format_number(current)} -> {format_number(new)} in "
        f"{', '.join(dict.fromkeys(changed))}: each step then takes lr x {format_number(new)} "
        "of every weight's size off it",
    )


def _number_node(
    ctx: PatchContext, value: cst.BaseExpression
) -> tuple[cst.BaseExpression | None, str | None]:
    """The literal a ``weight_decay=`` value is, and where it is when not in the call: itself,
    the number a module constant holds, an argparse flag's default (``args.wd``), or a config's
    dict entry, class attribute or keyword (``patches.values``)."""
    if number(value) is not None:
        return value, None
    if isinstance(value, cst.Name):
        assign = ctx.script.module_assignment(value.value)
        if assign is not None and number(assign.value) is not None:
            return assign.value, f"`{value.value} = ...` on line {ctx.script.line(assign)}"
        return None, None
    if isinstance(value, cst.Attribute):
        dest = value.attr.value
        given = (ctx.report.config.args_given or {}).get(dest)
        if given and given != "positional":
            return None, None  # the command line set it: its origin says where
        default = argparse_default_arg(ctx.script, dest)
        if default is not None:
            return default.value, f"the default of --{dest.replace('_', '-')}"
    return literal_behind(ctx.script, value)


def _positive(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
