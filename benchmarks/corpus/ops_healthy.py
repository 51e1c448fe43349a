"""Healthy variations: changes a working script survives and that must stay clean (another
seed, optimizer, learning rate or batch size, label smoothing, a cosine schedule, clipping,
a stable hand-written loss, a loss offset below 0, a part frozen on purpose)."""

from __future__ import annotations

import random

import libcst as cst

from benchmarks.corpus.edit import Editor, expr
from benchmarks.corpus.operators import Mutant, Skip, operator
from benchmarks.corpus.places import (
    _code,
    first_loop_stmt,
    literal,
    number,
    optimizer_keywords,
    root_stmt,
    scale_lr,
)
from benchmarks.corpus.source import Script, call_name, dotted


@operator("healthy-base")
def healthy_base(script: Script, rng: random.Random) -> Mutant | Skip:
    return Mutant(script.code, "the base as it is")


@operator("healthy-reseed")
def healthy_reseed(script: Script, rng: random.Random) -> Mutant | Skip:
    seeds = [
        c for c in script.calls("manual_seed") if c.args and number(c.args[0].value) is not None
    ]
    if not seeds:
        return Skip("no literal seed")
    new = rng.randrange(100, 10_000)
    editor = Editor(script.tree)
    for call in seeds:
        editor.replace(call.args[0].value, expr(str(new)))
    return Mutant(editor.apply(), f"the seed is {new}")


@operator("healthy-lr-halved")
def healthy_lr_halved(script: Script, rng: random.Random) -> Mutant | Skip:
    return scale_lr(script, {"*": 0.5}, "every learning rate halved")


@operator("healthy-adam-to-adamw")
def healthy_adam_to_adamw(script: Script, rng: random.Random) -> Mutant | Skip:
    calls = [c for c in script.optimizer_calls() if call_name(c) == "Adam"]
    if not calls:
        return Skip("no Adam optimizer")
    editor = Editor(script.tree)
    for call in calls:
        editor.replace(call.func, expr(dotted(call.func)[: -len("Adam")] + "AdamW"))
    return Mutant(editor.apply(), "Adam is AdamW (decoupled weight decay 0.01)")


@operator("healthy-batch-doubled")
def healthy_batch_doubled(script: Script, rng: random.Random) -> Mutant | Skip:
    editor = Editor(script.tree)
    changed = 0
    loop = script.loop()
    for call in script.calls("randint"):
        size = call.args[2].value if len(call.args) == 3 else None
        if isinstance(size, cst.Tuple) and len(size.elements) == 1 and script.inside(call, loop):
            value = number(size.elements[0].value)
            if value is not None and _written_again(script, loop, value):
                return Skip("the batch size is also written elsewhere in the loop (labels...)")
            if value is not None:
                editor.replace(size.elements[0].value, expr(str(int(value) * 2)))
                changed += 1
    for call in script.calls("DataLoader"):
        arg = optimizer_keywords(call).get("batch_size")
        if arg is not None and number(arg.value) is not None:
            editor.replace(arg.value, expr(str(int(number(arg.value) or 0) * 2)))
            changed += 1
    if not changed:
        return Skip("no literal batch size")
    return Mutant(editor.apply(), "the batch size is doubled")


def _written_again(script: Script, loop: cst.CSTNode | None, value: float) -> bool:
    """The same integer appears more than once in the loop: other sizes must agree with it
    (``torch.ones(64, 1)`` labels for a batch of 64), so doubling one would break the run."""
    same = [
        node
        for node in script.nodes()
        if isinstance(node, cst.Integer) and number(node) == value and script.inside(node, loop)
    ]
    return len(same) > 1


@operator("healthy-label-smoothing")
def healthy_label_smoothing(script: Script, rng: random.Random) -> Mutant | Skip:
    calls = [c for c in script.calls("cross_entropy", "CrossEntropyLoss")]
    if not calls:
        return Skip("no cross-entropy")
    editor = Editor(script.tree)
    for call in calls:
        smoothing = cst.Arg(literal(0.1), cst.Name("label_smoothing"))
        editor.replace(call, call.with_changes(args=[*call.args, smoothing]))
    return Mutant(editor.apply(), "cross-entropy with label smoothing 0.1")


@operator("healthy-cosine-schedule")
def healthy_cosine_schedule(script: Script, rng: random.Random) -> Mutant | Skip:
    names = script.optimizer_names()
    step = first_loop_stmt(script, "step")
    if not names or step is None or script.calls("LambdaLR", "StepLR"):
        return Skip("no optimizer step statement without a scheduler")
    opt_stmt = script.assignments(names[0])[0]
    code = (
        Editor(script.tree)
        .insert_after(
            opt_stmt,
            f"cosine = torch.optim.lr_scheduler.CosineAnnealingLR({names[0]}, T_max=200)",
        )
        .insert_after(step, "cosine.step()")
        .apply()
    )
    return Mutant(code, "a cosine schedule over 200 steps")


@operator("healthy-clip-added")
def healthy_clip_added(script: Script, rng: random.Random) -> Mutant | Skip:
    place = root_stmt(script)
    backward = script.backward_stmts()
    if isinstance(place, Skip) or len(backward) != 1 or script.loop() is None:
        return Skip("no single backward() in a loop")
    if script.calls("clip_grad_norm_", "GradScaler"):
        return Skip("already clipped, or scaled gradients")
    code = (
        Editor(script.tree)
        .insert_after(backward[0], f"torch.nn.utils.clip_grad_norm_({place[0]}.parameters(), 1.0)")
        .apply()
    )
    return Mutant(code, "gradients clipped at norm 1")


@operator("healthy-hand-written-ce")
def healthy_hand_written_ce(script: Script, rng: random.Random) -> Mutant | Skip:
    calls = [c for c in script.calls("cross_entropy") if len(c.args) == 2]
    if not calls:
        return Skip("no functional cross_entropy")
    editor = Editor(script.tree)
    for call in calls:
        logits, labels = (_code(a.value) for a in call.args)
        editor.replace(
            call,
            expr(f"-torch.log_softmax({logits}, dim=-1).gather(-1, ({labels})[:, None]).mean()"),
        )
    return Mutant(editor.apply(), "cross-entropy written by hand from log_softmax")


@operator("healthy-negative-loss")
def healthy_negative_loss(script: Script, rng: random.Random) -> Mutant | Skip:
    name, stmt = script.loss_name(), script.loss_stmt()
    if name is None or stmt is None:
        return Skip("no loss assigned before its backward()")
    offset = rng.choice([5.0, 10.0])
    code = Editor(script.tree).insert_after(stmt, f"{name} = {name} - {offset!r}").apply()
    return Mutant(code, f"a constant {offset:g} is taken off the loss (it goes below 0)")


@operator("healthy-frozen-first-part")
def healthy_frozen_first_part(script: Script, rng: random.Random) -> Mutant | Skip:
    root = script.root()
    if root is None or root[1] is None or len(root[1].submodules()) < 2:
        return Skip("no model class with two submodules")
    first = root[1].submodules()[0]
    stmt = script.assignments(root[0])[0]
    code = (
        Editor(script.tree).insert_after(stmt, f"{root[0]}.{first}.requires_grad_(False)").apply()
    )
    return Mutant(code, f"{first} is frozen on purpose; the rest trains")
