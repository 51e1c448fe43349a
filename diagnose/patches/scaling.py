"""enable-loss-scaling: put a GradScaler around backward and step, when that is simple.

Simple means: float16 comes from ``torch.autocast`` (the weights stay float32; a GradScaler
refuses to unscale float16 gradients, so a ``.half()`` model is left to the example), there is
one optimizer bound to a name, and the loop has plain ``loss.backward()`` and ``opt.step()``
statements.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, code_of

SCALER = "scaler"


@patcher("enable-loss-scaling")
def enable_loss_scaling(ctx: PatchContext) -> Patched:
    script = ctx.script
    torch = ctx.torch_name()
    if script.calls("GradScaler"):
        raise NoPatch("the script already builds a GradScaler")
    if script.calls("half"):
        raise NoPatch(
            "the model is cast with .half(): a GradScaler cannot unscale float16 "
            "gradients; keep float32 weights and use autocast as in the example"
        )
    autocasts = script.calls("autocast")
    if not autocasts:
        raise NoPatch("no torch.autocast in the script: loss scaling is for float16 autocast")
    device = _device(autocasts[0])
    calls = script.optimizer_calls()
    optimizer = script.assigned_name(calls[0]) if len(calls) == 1 else None
    if optimizer is None:
        raise NoPatch("no single optimizer bound to a name")
    backwards = [c for c in script.calls("backward") if script.is_own_statement(c)]
    steps = [
        c
        for c in script.calls("step")
        if script.is_own_statement(c) and code_of(c.func.value) == optimizer and not c.args
    ]
    if len(backwards) != 1 or len(steps) != 1:
        raise NoPatch(f"expected one `loss.backward()` and one `{optimizer}.step()` statement")
    edit = ctx.edit()
    edit.insert_after(
        script.small_statement_of(calls[0]), f"{SCALER} = {torch}.amp.GradScaler({device})"
    )
    backward = backwards[0]
    edit.replace(backward, f"{SCALER}.scale({code_of(backward.func.value)}).backward()")
    edit.replace(steps[0], f"{SCALER}.step({optimizer})")
    edit.insert_after(script.small_statement_of(steps[0]), f"{SCALER}.update()")
    return Patched(
        edit.result(),
        "scales the loss before backward and skips the steps whose "
        "gradients overflow (torch.amp.GradScaler)",
    )


def _device(autocast: cst.Call) -> str:
    for arg in autocast.args:
        if arg.keyword is None or arg.keyword.value == "device_type":
            return code_of(arg.value)
    return '"cuda"'
