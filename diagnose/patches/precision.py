"""use-bf16, upcast-to-fp32 and raise-adam-eps: the precision-related patches.

use-bf16 swaps every float16 spelling (``torch.float16``/``torch.half``, ``.half()``) for
bfloat16, autocast included; under a Lightning Trainer with a float16 precision it sets the
Trainer's ``precision`` to its bfloat16 counterpart where the Trainer got its arguments, and
under transformers' ``fp16=True`` it turns ``bf16`` on where ``fp16`` was turned on; a float16
chosen by name (``--dtype=float16``, a configurator's ``dtype = 'float16'``) is named
``bfloat16`` there.
upcast-to-fp32 computes the loss line in float32 when the event was born in the loss, and
otherwise takes the script back to float32. raise-adam-eps gives Adam an eps that float16
can hold, where the run's eps came from (a flag, a config file, the script's optimizer call,
the TrainingArguments' ``adam_epsilon``).
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.comments import refresh_comments
from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.settings import ELSEWHERE, change_setting, origin_of, swap_dtype, swap_switch
from diagnose.patches.source import NoPatch, code_of, dotted, number, with_keyword
from diagnose.patches.trainer_settings import add_trainer_argument, add_training_argument

HALF_DTYPES = {"float16", "half"}
# The smallest positive float16 is ~6e-8: an eps of 1e-8 rounds to 0. 1e-4 is well inside the
# normal range and still small next to sqrt(v) of any gradient that matters.
FP16_ADAM_EPS = "1e-4"
ADAMS = {"Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam"}
# Callees whose tensor arguments the loss line may upcast: torch / functional ops, not the
# user's own model (which may hold fp16 weights).
TORCH_CALLEES = ("torch.", "F.", "nn.functional.", "functional.")


# the words a comment on a switched line uses for what it no longer is
TO_BF16 = {"fp16": "bf16", "float16": "bfloat16"}
TO_FP32 = {"fp16": "fp32", "float16": "float32"}
BF16_WHY = "the same autocast in bfloat16, which has float32's range (a GPU with bf16 needed)"
# Lightning's float16 precisions and their bfloat16 counterparts
LIGHTNING_BF16 = {"16-mixed": "bf16-mixed", "16": "bf16-mixed", "16-true": "bf16-true"}


@patcher("use-bf16")
def use_bf16(ctx: PatchContext) -> Patched:
    lightning = ctx.report.config.lightning or {}
    bf16 = LIGHTNING_BF16.get(str(lightning.get("precision")))
    if bf16 is not None:  # the Trainer runs the autocast: its precision is the setting
        return add_trainer_argument(ctx, "precision", bf16)
    if (ctx.report.config.transformers or {}).get("fp16") is True:
        origin = origin_of(ctx, "fp16")
        if origin is None:
            raise NoPatch(
                "the Trainer runs float16 autocast for TrainingArguments(fp16=True), turned on "
                "where the run does not show: give bf16=True in its place"
            )
        return swap_switch(ctx, origin, "bf16", BF16_WHY)
    origin = origin_of(ctx, "precision")
    if origin is not None:  # float16 chosen by name: a flag, a configurator, a config key
        return swap_dtype(ctx, origin, BF16_WHY)
    edit = ctx.edit()
    count = _swap_half(ctx, edit, "bfloat16", "bfloat16")
    if not count:
        raise NoPatch("no float16 in the script (torch.float16, torch.half or .half())")
    return Patched(
        refresh_comments(ctx.script.source, edit.result(), TO_BF16),
        f"{count} float16 use(s) switched to bfloat16 (same range as "
        "float32; a GradScaler is no longer needed)",
    )


@patcher("upcast-to-fp32")
def upcast_to_fp32(ctx: PatchContext) -> Patched:
    event = ctx.report.event
    if event is not None and event.phase == "loss" and ctx.event_line is not None:
        patched = _upcast_loss_line(ctx)
        if patched is not None:
            return patched
    origin = origin_of(ctx, "precision")
    if origin is not None and origin.value == "float16":  # fp16's family may have no fp32
        return swap_dtype(ctx, origin, "float32 throughout", {"float16": "float32"})
    edit = ctx.edit()
    count = _swap_half(ctx, edit, "float32", "float")
    if not count:
        raise NoPatch(
            "no float16 in the script to take back to float32; compute the failing "
            "op in float32 (`x.float()`) as in the example"
        )
    return Patched(
        refresh_comments(ctx.script.source, edit.result(), TO_FP32),
        f"{count} float16 use(s) switched to float32",
    )


@patcher("raise-adam-eps")
def raise_adam_eps(ctx: PatchContext) -> Patched:
    """eps where the run's came from when it came from outside the script (a flag, a config
    file); else each Adam call of the script; else the TrainingArguments' ``adam_epsilon``."""
    why = "float16 rounds the default 1e-8 to 0, so Adam's update divided by 0"
    origin = origin_of(ctx, "eps")
    if origin is not None and origin.kind in ELSEWHERE:
        patched = change_setting(ctx, origin, float(FP16_ADAM_EPS), "eps")
        patched.note = f"{patched.note}: {why}"
        return patched
    script = ctx.script
    calls = [c for c in script.optimizer_calls() if dotted(c.func).split(".")[-1] in ADAMS]
    if not calls and ctx.report.config.transformers is not None:
        patched = add_training_argument(ctx, "adam_epsilon", float(FP16_ADAM_EPS))
        patched.note = f"{patched.note}: {why}"
        return patched
    if not calls:
        raise NoPatch("no Adam-family optimizer is constructed in the script")
    edit = ctx.edit()
    for call in calls:
        eps = script.keyword(call, "eps")
        if eps is None:
            edit.replace(call, with_keyword(call, "eps", FP16_ADAM_EPS))
        elif number(eps.value) is None or number(eps.value) < float(FP16_ADAM_EPS):
            edit.replace(eps.value, FP16_ADAM_EPS)
    return Patched(edit.result(), f"eps={FP16_ADAM_EPS}: {why}")


def _swap_half(ctx: PatchContext, edit, dtype: str, method: str) -> int:
    """Replace float16 spellings with ``dtype`` / ``.method()``; returns how many."""
    count = 0
    for node in ctx.script.nodes(cst.Attribute):
        name = dotted(node)
        if (
            name
            and name.split(".")[0] in ("torch",)
            and node.attr.value in HALF_DTYPES
            and len(name.split(".")) == 2
        ):
            edit.replace(node, node.with_changes(attr=cst.Name(dtype)))
            count += 1
    for call in ctx.script.calls("half"):
        if isinstance(call.func, cst.Attribute) and not call.args:
            edit.replace(call.func, call.func.with_changes(attr=cst.Name(method)))
            count += 1
    for string in ctx.script.nodes(cst.SimpleString):
        if string.evaluated_value in ("float16", "fp16") and _is_dtype_keyword(ctx, string):
            edit.replace(string, string.value.replace(string.evaluated_value, dtype))
            count += 1
    return count


def _is_dtype_keyword(ctx: PatchContext, node: cst.CSTNode) -> bool:
    parent = ctx.script.parent(node)
    return (
        isinstance(parent, cst.Arg)
        and parent.keyword is not None
        and (parent.keyword.value in ("dtype", "torch_dtype"))
    )


def _upcast_loss_line(ctx: PatchContext) -> Patched | None:
    """``loss = ((pred - y) ** 2).sum()`` -> ``((pred.float() - y.float()) ** 2).sum()``."""
    script = ctx.script
    edit = ctx.edit()
    names = []
    for name in script.on_line(ctx.event_line, cst.Name):
        if _is_tensor_operand(script, name):
            names.append(name)
    if not names:
        return None
    for name in names:
        edit.replace(name, f"{name.value}.float()")
    upcast = ", ".join(sorted({code_of(n) for n in names}))
    return Patched(
        edit.result(),
        f"the loss on line {ctx.event_line} is computed in float32 ({upcast} upcast with .float())",
    )


def _is_tensor_operand(script, name: cst.Name) -> bool:
    """A bare name used as an arithmetic operand or as an argument of a torch function.

    Not a callee, an attribute's owner (``x`` in ``x.sum()``), a keyword, an assignment target,
    nor an argument of the user's own callables (a model may hold fp16 weights).
    """
    parent = script.parent(name)
    if isinstance(
        parent, cst.BinaryOperation | cst.UnaryOperation | cst.Comparison | cst.ComparisonTarget
    ):
        return True
    if isinstance(parent, cst.Arg) and parent.value is name:
        call = script.parent(parent)
        callee = dotted(call.func) if isinstance(call, cst.Call) else None
        return bool(callee) and callee.startswith(TORCH_CALLEES)
    return False
