"""add-lr-warmup: a linear warmup with ``LambdaLR``, stepped right after the optimizer.

Only when it is simple: one optimizer bound to a name, one ``opt.step()`` statement, and no
scheduler already (two schedulers would need ``SequentialLR``, which the example shows).

Under transformers' Trainer the schedule is the Trainer's: ``warmup_steps`` is given to its
``TrainingArguments`` where they got their other arguments (``trainer_settings``). Under
Lightning the schedule is what ``configure_optimizers`` returns, which no Trainer argument
sets: the reason says so.
"""

from __future__ import annotations

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of
from diagnose.patches.trainer_settings import add_training_argument

WARMUP_STEPS = 100


@patcher("add-lr-warmup")
def add_lr_warmup(ctx: PatchContext) -> Patched:
    transformers = ctx.report.config.transformers
    if transformers is not None:
        if str(transformers.get("lr_scheduler_type", "")).lower().endswith("constant"):
            raise NoPatch(
                "the Trainer's lr_scheduler_type is constant, which has no warmup: "
                f"use lr_scheduler_type='constant_with_warmup' with warmup_steps={WARMUP_STEPS}"
            )
        return add_training_argument(ctx, "warmup_steps", WARMUP_STEPS)
    if ctx.report.config.lightning is not None:
        raise NoPatch(
            "under Lightning the lr schedule is what configure_optimizers returns: return a "
            "LambdaLR warmup with the optimizer there, as in the example"
        )
    script = ctx.script
    torch = ctx.torch_name()
    existing = script.nodes_named_like("lr_scheduler")
    if existing:
        raise NoPatch(
            f"the script already uses an lr scheduler (line {script.line(existing[0])})"
            ": chain a warmup before it with SequentialLR as in the example"
        )
    calls = script.optimizer_calls()
    optimizer = script.assigned_name(calls[0]) if len(calls) == 1 else None
    if optimizer is None:
        raise NoPatch("no single optimizer bound to a name")
    steps = [
        c
        for c in script.calls("step")
        if script.is_own_statement(c) and code_of(c.func.value) == optimizer and not c.args
    ]
    if len(steps) != 1:
        raise NoPatch(f"expected one `{optimizer}.step()` statement")
    edit = ctx.edit()
    edit.insert_after(
        script.small_statement_of(calls[0]),
        f"warmup = {torch}.optim.lr_scheduler.LambdaLR("
        f"{optimizer}, lambda step: min(1.0, (step + 1) / {WARMUP_STEPS}))",
    )
    edit.insert_after(script.small_statement_of(steps[0]), "warmup.step()")
    return Patched(edit.result(), f"the lr ramps up linearly over the first {WARMUP_STEPS} steps")
