"""Faults that leave the run finite but keep it from learning: the training calls dropped or out
of order, parameters the optimizer never sees, a cut graph, a learning rate decayed to 0 or far
too low, probabilities into a logit loss, labels shuffled, eval mode, broadcasting losses, a
weight decay that erases the weights, gradients clipped to 0, erased or raw data, dead ReLUs."""

from __future__ import annotations

import random

import libcst as cst

from benchmarks.corpus.edit import Editor, expr
from benchmarks.corpus.operators import Mutant, Skip, operator
from benchmarks.corpus.places import (
    _code,
    before_training,
    data_tensor,
    first_loop_stmt,
    forward_return,
    literal,
    lr_sites,
    model_source,
    optimizer_keywords,
    root_stmt,
    scale_lr,
)
from benchmarks.corpus.source import Script, assigned_name, call_name, dotted, expr_call, walk


@operator("no-zero-grad", "gradients-never-cleared", ("add-zero-grad",))
def no_zero_grad(script: Script, rng: random.Random) -> Mutant | Skip:
    stmts = script.loop_calls("zero_grad") + script.loop_calls("zero_")
    if not stmts:
        return Skip("the script never clears gradients itself")
    editor = Editor(script.tree)
    for stmt in stmts:
        editor.remove(stmt)
    return Mutant(editor.apply(), "every zero_grad() call is removed")


@operator("no-optimizer-step", "backward-without-step", ("call-optimizer-step",))
def no_optimizer_step(script: Script, rng: random.Random) -> Mutant | Skip:
    calls = {id(c) for c in script.step_calls()}
    stmts = [
        s for s in script.loop_calls("step") if id(expr_call(s)) in calls
    ]  # statements, not L-BFGS's `loss = optimizer.step(closure)`
    if not stmts:
        return Skip("no optimizer step statement")
    editor = Editor(script.tree)
    scalers = {n for n in _names_made_by(script, "GradScaler")}
    for stmt in [*stmts, *script.loop_calls("update", scalers)]:
        editor.remove(stmt)
    return Mutant(editor.apply(), "every optimizer.step() statement is removed")


def _names_made_by(script: Script, maker: str) -> list[str]:
    out = []
    for call in script.calls(maker):
        stmt = script.statement_of(call)
        if stmt is not None and (name := assigned_name(stmt)):
            out.append(name)
    return out


def _same_block(script: Script, *stmts: cst.CSTNode) -> bool:
    return len({id(script.parent(s)) for s in stmts}) == 1


def _move(script: Script, mover: cst.SimpleStatementLine, anchor, after: bool, what: str):
    editor = Editor(script.tree).remove(mover)
    text = _code(mover).strip()
    (editor.insert_after if after else editor.insert_before)(anchor, text)
    return Mutant(editor.apply(), what)


@operator("zero-grad-after-backward", "training-calls-out-of-order", ("fix-training-call-order",))
def zero_grad_after_backward(script: Script, rng: random.Random) -> Mutant | Skip:
    zero = first_loop_stmt(script, "zero_grad")
    backward = script.backward_stmts()
    steps = _step_stmts(script)
    if zero is None or not backward or not steps or not _same_block(script, backward[0], steps[0]):
        return Skip("no backward() and step() in one block of a loop")
    if not script.inside(zero, script.loop()):
        return Skip("zero_grad() is not called in the loop")
    if script.calls("GradScaler"):
        return Skip("a GradScaler's step asserts on gradients cleared to None: a crash, not this")
    return _move(script, zero, backward[0], True, "zero_grad() moved between backward() and step()")


def _step_stmts(script: Script) -> list[cst.SimpleStatementLine]:
    calls = {id(c) for c in script.step_calls()}
    return [s for s in script.loop_calls("step") if id(expr_call(s)) in calls]


@operator("step-before-backward", "training-calls-out-of-order", ("fix-training-call-order",))
def step_before_backward(script: Script, rng: random.Random) -> Mutant | Skip:
    steps = _step_stmts(script)
    backward = script.backward_stmts()
    zero = first_loop_stmt(script, "zero_grad")
    if len(steps) != 1 or len(backward) != 1 or zero is None:
        return Skip("not one backward(), step() and zero_grad() in the loop")
    if not _same_block(script, steps[0], backward[0], zero):
        return Skip("the step is not in the backward's block (accumulation): it would still learn")
    if script.calls("unscale_") or script.calls("GradScaler"):
        return Skip("a GradScaler's step must follow its backward")
    return _move(script, steps[0], backward[0], False, "optimizer.step() moved before backward()")


@operator(
    "head-only-optimizer", "parameters-not-in-optimizer", ("pass-all-parameters-to-optimizer",)
)
def head_only_optimizer(script: Script, rng: random.Random) -> Mutant | Skip:
    root = script.root()
    if root is None or root[1] is None or len(root[1].submodules()) < 2:
        return Skip("no model class with two submodules")
    last = root[1].submodules()[-1]
    editor = Editor(script.tree)
    found = False
    for call in script.optimizer_calls():
        arg = call.args[0].value if call.args else None
        if isinstance(arg, cst.Call) and dotted(arg.func) in {
            f"{root[0]}.parameters",
            "self.parameters",
        }:
            owner = dotted(arg.func).rsplit(".", 1)[0]
            editor.replace(arg, expr(f"{owner}.{last}.parameters()"))
            found = True
    if not found:
        return Skip("no optimizer built from the model's parameters()")
    return Mutant(editor.apply(), f"the optimizer gets only {last}'s parameters")


@operator("detach-before-head", "gradient-flow-cut", ("restore-gradient-flow",))
def detach_before_head(script: Script, rng: random.Random) -> Mutant | Skip:
    root = script.root()
    if root is None or root[1] is None or root[1].forward is None:
        return Skip("no model class with a forward")
    place = forward_return(script)
    if isinstance(place, Skip) or isinstance(place[1].value, cst.Tuple):
        return Skip("the forward returns several outputs; another may still carry gradients")
    params = set(root[1].forward_params())
    candidates = []
    for node in walk(root[1].forward):
        if isinstance(node, cst.Call) and dotted(node.func).startswith("self.") and node.args:
            arg = node.args[0].value
            if not (isinstance(arg, cst.Name) and arg.value in params) and call_name(node) in set(
                root[1].submodules()
            ):
                candidates.append(arg)
    if not candidates:
        return Skip("no submodule in the forward reads an intermediate")
    arg = candidates[-1]
    code = Editor(script.tree).replace(arg, expr(f"({_code(arg)}).detach()")).apply()
    return Mutant(code, "the features are detached before the model's last layer")


@operator("lr-decayed-per-step", "lr-schedule-collapse", ("fix-lr-schedule",))
def lr_decayed_per_step(script: Script, rng: random.Random) -> Mutant | Skip:
    names = script.optimizer_names()
    step = first_loop_stmt(script, "step")
    if not names or step is None or script.calls("LambdaLR", "StepLR"):
        return Skip("no optimizer step statement without a scheduler")
    gamma = rng.choice([0.5, 0.7])
    opt_stmt = script.assignments(names[0])[0]
    code = (
        Editor(script.tree)
        .insert_after(
            opt_stmt,
            f"decay = torch.optim.lr_scheduler.StepLR({names[0]}, step_size=1, gamma={gamma})",
        )
        .insert_after(step, "decay.step()")
        .apply()
    )
    return Mutant(code, f"a StepLR with gamma {gamma} is stepped after every optimizer step")


@operator("lr-far-too-low", "lr-too-low", ("raise-learning-rate",))
def lr_far_too_low(script: Script, rng: random.Random) -> Mutant | Skip:
    factor = rng.choice([1e-6, 1e-7])
    return scale_lr(script, {"*": factor}, f"every learning rate multiplied by {factor:g}")


@operator(
    "softmax-into-cross-entropy",
    "probabilities-into-logit-loss",
    ("remove-softmax-before-cross-entropy",),
)
def softmax_into_cross_entropy(script: Script, rng: random.Random) -> Mutant | Skip:
    calls = script.loss_calls("cross_entropy")
    if not calls:
        return Skip("no cross-entropy computed in the script")
    editor = Editor(script.tree)
    for call in calls:
        logits = call.args[0].value
        editor.replace(logits, expr(f"torch.softmax({_code(logits)}, dim=-1)"))
    return Mutant(editor.apply(), "softmax probabilities go into cross_entropy")


@operator("labels-shuffled", "loss-at-chance", ("fix-label-alignment",))
def labels_shuffled(script: Script, rng: random.Random) -> Mutant | Skip:
    labels = script.tensor_before_training(script.data_names()[1])
    features = script.tensor_before_training(script.data_names()[0])
    if labels is None or labels == features:
        return Skip("no label tensor apart from the inputs")
    edit = before_training(script, f"{labels}.copy_({labels}[torch.randperm({labels}.shape[0])])")
    if isinstance(edit, Skip):
        return edit
    return Mutant(edit.apply(), f"the labels {labels} are shuffled apart from their inputs")


@operator("eval-mode", "model-in-eval-mode", ("set-train-mode",))
def eval_mode(script: Script, rng: random.Random) -> Mutant | Skip:
    place = root_stmt(script)
    if isinstance(place, Skip):
        return place
    root, _ = place
    trains = script.loop_calls("train", {root})
    library_model = script.root() is not None and script.root()[1] is None  # type: ignore[index]
    if not any(k in model_source(script) for k in ("BatchNorm", "Dropout(")) and not (
        library_model and "transformers" in script.code
    ):
        return Skip("the model has no train-mode behaviour (BatchNorm, dropout) to lose")
    if script.loop() is None:
        return Skip("a framework sets the mode itself")
    editor = Editor(script.tree)
    if trains:
        for stmt in trains:
            editor.replace(stmt, cst.parse_statement(f"{root}.eval()\n"))
    else:
        editor = before_training(script, f"{root}.eval()")
        if isinstance(editor, Skip):
            return editor
    return Mutant(editor.apply(), "the model is put in eval mode for training")


@operator("mse-broadcast", "target-shape-broadcast", ("fix-target-shape",))
def mse_broadcast(script: Script, rng: random.Random) -> Mutant | Skip:
    calls = [c for c in script.loss_calls("mse") if len(c.args) >= 2]
    if not calls:
        return Skip("no mse loss")
    editor = Editor(script.tree)
    for call in calls:
        a, b = call.args[0].value, call.args[1].value
        editor.replace(a, expr(f"({_code(a)}).reshape(-1, 1)"))
        editor.replace(b, expr(f"({_code(b)}).reshape(-1)"))
    return Mutant(editor.apply(), "an (N, 1) prediction meets an (N,) target in mse_loss")


@operator("weight-decay-erases", "weight-decay-too-strong", ("lower-weight-decay",))
def weight_decay_erases(script: Script, rng: random.Random) -> Mutant | Skip:
    sites = [(n, v) for n, v, k in lr_sites(script) if k == "AdamW"]
    calls = [c for c in script.optimizer_calls() if call_name(c) == "AdamW"]
    if not calls or not sites:
        return Skip("no AdamW with a literal learning rate")
    decay = 0.5 / sites[0][1]
    editor = Editor(script.tree)
    for call in calls:
        arg = optimizer_keywords(call).get("weight_decay")
        if arg is not None:
            editor.replace(arg.value, literal(decay))
        else:
            editor.replace(
                call,
                call.with_changes(
                    args=[*call.args, cst.Arg(literal(decay), cst.Name("weight_decay"))]
                ),
            )
    return Mutant(editor.apply(), f"AdamW's weight_decay is {decay:g} (lr x decay = 0.5)")


@operator("clip-to-zero", "gradients-clipped-to-zero", ("raise-clip-limit",))
def clip_to_zero(script: Script, rng: random.Random) -> Mutant | Skip:
    clips = script.calls("clip_grad_norm_")
    editor = Editor(script.tree)
    if clips:
        for call in clips:
            editor.replace(call.args[1].value, literal(0.0))
        return Mutant(editor.apply(), "the clip limit is 0")
    place = root_stmt(script)
    backward = script.backward_stmts()
    if isinstance(place, Skip) or len(backward) != 1 or script.loop() is None:
        return Skip("no single backward() in a loop to clip after")
    if script.calls("GradScaler"):
        return Skip("a GradScaler's gradients are clipped only after unscale_")
    editor.insert_after(
        backward[0], f"torch.nn.utils.clip_grad_norm_({place[0]}.parameters(), 0.0)"
    )
    return Mutant(editor.apply(), "gradients are clipped to norm 0 after backward()")


def _inputs_apart_from_targets(script: Script) -> str | Skip:
    """The float features, unless they are also the targets (an autoencoder's data, where
    changing them changes what is learnt, not whether it can be)."""
    name = data_tensor(script, 0, "float")
    if not isinstance(name, Skip) and script.tensor_before_training(script.data_names()[1]) == name:
        return Skip("the features are also the targets")
    return name


@operator("features-truncated", "constant-inputs", ("fix-input-pipeline",))
def features_truncated(script: Script, rng: random.Random) -> Mutant | Skip:
    name = _inputs_apart_from_targets(script)
    if isinstance(name, Skip):
        return name
    edit = before_training(script, f"{name}.copy_(torch.sigmoid({name}).long())")
    if isinstance(edit, Skip):
        return edit
    return Mutant(
        edit.apply(), f"the features {name} are squashed to [0, 1) and cast to integers (all 0)"
    )


@operator("raw-scale-inputs", "unnormalized-inputs", ("normalize-inputs",))
def raw_scale_inputs(script: Script, rng: random.Random) -> Mutant | Skip:
    name = _inputs_apart_from_targets(script)
    if isinstance(name, Skip):
        return name
    if "Norm" in model_source(script):
        return Skip("the model normalises its activations itself")
    scale = rng.choice([255.0, 1000.0])
    edit = before_training(script, f"{name}.mul_({scale!r}).add_({scale / 2!r})")
    if isinstance(edit, Skip):
        return edit
    return Mutant(edit.apply(), f"the features {name} are in raw units (x{scale:g}, offset)")


@operator("dead-relu-bias", "dying-relus", ("fix-initialization",))
def dead_relu_bias(script: Script, rng: random.Random) -> Mutant | Skip:
    source = model_source(script) or script.code
    if "relu" not in source.lower() or "Norm" in source:
        return Skip("no ReLU fed straight by a Linear")
    place = root_stmt(script)
    if isinstance(place, Skip):
        return place
    root, stmt = place
    code = (
        Editor(script.tree)
        .insert_after(
            stmt,
            f"for m in {root}.modules():\n"
            "    if isinstance(m, torch.nn.Linear):\n"
            "        torch.nn.init.constant_(m.bias, -10.0)",
        )
        .apply()
    )
    return Mutant(code, "every Linear bias starts at -10, so the ReLUs after them are dead")


@operator("plain-list-layers", "unregistered-submodules", ("register-submodules",))
def plain_list_layers(script: Script, rng: random.Random) -> Mutant | Skip:
    lists = [c for c in script.calls("ModuleList") if c.args]
    if not lists:
        return Skip("no ModuleList in the model")
    editor = Editor(script.tree)
    for call in lists:
        editor.replace(call, call.args[0].value)
    return Mutant(editor.apply(), "the layers are kept in a plain list, not a ModuleList")
