"""The fixes of runs that stay finite but do not learn, written into the training loop or model.

Each patcher finds its one certain place from the script's structure (the optimizer the script
builds, the loop that calls its ``step()``, the loss call) and, where the run's learning evidence
says more (the list that holds unregistered layers, the shapes a loss was given), from that;
where two places would fit equally, it says so (``NoPatch``) rather than guess.
"""

from __future__ import annotations

import libcst as cst

from diagnose.patches.context import PatchContext, Patched
from diagnose.patches.registry import patcher
from diagnose.patches.source import NoPatch, Script, code_of, dotted

LOOPS = (cst.For, cst.While)
CROSS_ENTROPY = ("cross_entropy", "CrossEntropyLoss")
TARGET_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "MSELoss", "L1Loss")


# -- the optimizer, its loop and its calls ---------------------------------------------------


def _optimizer(ctx: PatchContext) -> tuple[cst.Call, str]:
    """The script's one optimizer construction and the name it is bound to."""
    calls = ctx.script.optimizer_calls()
    if len(calls) != 1:
        raise NoPatch(
            "no torch.optim optimizer is constructed in the script"
            if not calls
            else f"{len(calls)} optimizers are constructed: apply the example to the one "
            "the finding names"
        )
    name = ctx.script.assigned_name(calls[0])
    if name is None:
        raise NoPatch(f"the optimizer on line {ctx.script.line(calls[0])} is not bound to a name")
    return calls[0], name


def _statements_calling(script: Script, method: str, receiver: str | None = None) -> list:
    """The statements that are one ``X.method(...)`` call (``X`` = ``receiver`` when given),
    or ``S.method(receiver)`` (a GradScaler's ``scaler.step(optimizer)``)."""
    found = []
    for call in script.calls(method):
        if not script.is_own_statement(call):
            continue
        owner = dotted(call.func.value)
        args = [dotted(a.value) for a in call.args]
        if receiver is None or owner == receiver or receiver in args:
            found.append(script.statement_of(call))
    return found


def _in_loop(script: Script, node: cst.CSTNode) -> bool:
    return any(isinstance(a, LOOPS) for a in script.ancestors(node))


def _block(script: Script, stmt: cst.CSTNode) -> cst.CSTNode | None:
    return script.parent(stmt)


def _the_one(script: Script, stmts: list, what: str) -> cst.SimpleStatementLine:
    looped = [s for s in stmts if _in_loop(script, s)]
    if len(looped) != 1:
        lines = ", ".join(str(script.line(s)) for s in looped)
        raise NoPatch(
            f"no {what} inside a loop in the script"
            if not looped
            else f"{len(looped)} {what} statements in loops (lines {lines}): apply the example "
            "to the training loop's"
        )
    return looped[0]


@patcher("add-zero-grad")
def add_zero_grad(ctx: PatchContext) -> Patched:
    script = ctx.script
    _, optimizer = _optimizer(ctx)
    if script.calls("zero_grad"):
        raise NoPatch(
            "the script already calls zero_grad() somewhere: check that it runs once per "
            "optimizer step (the example shows where)"
        )
    step = _the_one(script, _statements_calling(script, "step", optimizer), f"{optimizer}.step()")
    backward = [
        s
        for s in _statements_calling(script, "backward")
        if _block(script, s) is _block(script, step)
    ]
    edit = ctx.edit()
    if len(backward) == 1 and script.line(backward[0]) < script.line(step):
        edit.insert_before(backward[0], f"{optimizer}.zero_grad()")
        where = f"before the backward on line {script.line(backward[0])}"
    else:  # backward in an inner (accumulation) loop: clear once per step, right after it
        edit.insert_after(step, f"{optimizer}.zero_grad()")
        where = f"right after the step on line {script.line(step)}"
    return Patched(
        edit.result(),
        f"clears the gradients once per step ({optimizer}.zero_grad() {where}), "
        "so each update follows the current batch only",
    )


@patcher("call-optimizer-step")
def call_optimizer_step(ctx: PatchContext) -> Patched:
    script = ctx.script
    _, optimizer = _optimizer(ctx)
    if _statements_calling(script, "step", optimizer):
        raise NoPatch(f"the script calls {optimizer}.step() already: check that it is reached")
    backward = _the_one(script, _statements_calling(script, "backward"), "backward()")
    receiver = backward.body[0].value.func.value
    scaler = None
    func = receiver.func if isinstance(receiver, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value == "scale":
        scaler = dotted(func.value)
    edit = ctx.edit()
    if scaler is not None:
        edit.insert_after(backward, f"{scaler}.step({optimizer})", f"{scaler}.update()")
        what = f"{scaler}.step({optimizer}) and {scaler}.update()"
    else:
        edit.insert_after(backward, f"{optimizer}.step()")
        what = f"{optimizer}.step()"
    return Patched(
        edit.result(), f"calls {what} after the backward on line {script.line(backward)}"
    )


@patcher("pass-all-parameters-to-optimizer")
def pass_all_parameters(ctx: PatchContext) -> Patched:
    call, _ = _optimizer(ctx)
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    if not (
        isinstance(first, cst.Call)
        and isinstance(first.func, cst.Attribute)
        and first.func.attr.value == "parameters"
        and isinstance(first.func.value, cst.Attribute)
    ):
        raise NoPatch(
            "the optimizer is not given one submodule's parameters (model.part.parameters()): "
            "list every parameter group that should learn, as in the example"
        )
    part = first.func.value
    model = part.value
    if dotted(model) in (None, "self"):
        raise NoPatch(f"cannot tell which model {code_of(part)} belongs to")
    edit = ctx.edit()
    edit.replace(first.func, cst.Attribute(value=model, attr=cst.Name("parameters")))
    return Patched(
        edit.result(),
        f"gives the optimizer {code_of(model)}.parameters() instead of {code_of(part)}'s only; "
        "freeze what should stay fixed with requires_grad_(False)",
    )


@patcher("set-train-mode")
def set_train_mode(ctx: PatchContext) -> Patched:
    script = ctx.script
    call, optimizer = _optimizer(ctx)
    model = _model_of(call)
    steps = _statements_calling(script, "step", optimizer) or _statements_calling(
        script, "backward"
    )
    loops = {
        id(loop): loop
        for s in steps
        for loop in [a for a in script.ancestors(s) if isinstance(a, LOOPS)][-1:]
    }
    if len(loops) != 1:
        raise NoPatch(
            "no training loop found around the optimizer's step"
            if not loops
            else "several training loops: call model.train() at the start of each, as in "
            "the example"
        )
    loop = next(iter(loops.values()))
    edit = ctx.edit()
    edit.insert_first(loop, f"{model}.train()")
    return Patched(
        edit.result(),
        f"puts {model} in train mode at the start of each pass of the loop on line "
        f"{script.line(loop)} (an evaluation inside it switches it to eval mode again)",
    )


def _model_of(optimizer: cst.Call) -> str:
    first = optimizer.args[0].value if optimizer.args else None
    if (
        isinstance(first, cst.Call)
        and isinstance(first.func, cst.Attribute)
        and first.func.attr.value == "parameters"
        and (name := dotted(first.func.value)) is not None
    ):
        return name
    raise NoPatch("the optimizer is not built from a model's parameters()")


# -- the model -------------------------------------------------------------------------------


@patcher("register-submodules")
def register_submodules(ctx: PatchContext) -> Patched:
    script = ctx.script
    kept = _containers(ctx)
    found = [
        a
        for a in _self_containers(script)
        if (a.targets[0].target.attr.value in kept) or (not kept and _builds_modules(a.value))
    ]
    if not found:
        raise NoPatch("no `self.NAME = [...]` or `{...}` of layers in the script")
    nn = _nn(ctx)
    edit = ctx.edit()
    names = []
    for assign in found:
        kind = "ModuleDict" if isinstance(assign.value, cst.Dict | cst.DictComp) else "ModuleList"
        edit.replace(assign.value, f"{nn}.{kind}({code_of(assign.value)})")
        names.append(f"self.{assign.targets[0].target.attr.value} in {nn}.{kind}")
    return Patched(
        edit.result(),
        f"keeps {', '.join(names)}, so their parameters are registered and trained",
    )


def _containers(ctx: PatchContext) -> set[str]:
    """The attribute names the learning evidence says hold unregistered layers."""
    learning = ctx.report.learning
    notes = learning.unregistered if learning else []
    out = set()
    for note in notes:
        if note.container:
            out.add(note.container.split(" ")[0].split(".")[-1])
    return out


def _self_containers(script: Script) -> list[cst.Assign]:
    """``self.x = [...]`` / ``(...)`` / ``{...}`` (or a comprehension) inside a class."""
    found = []
    for assign in script.nodes(cst.Assign):
        if len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if not (isinstance(target, cst.Attribute) and dotted(target.value) == "self"):
            continue
        if not isinstance(
            assign.value, cst.List | cst.ListComp | cst.Tuple | cst.Dict | cst.DictComp
        ):
            continue
        if any(isinstance(a, cst.ClassDef) for a in script.ancestors(assign)):
            found.append(assign)
    return found


def _builds_modules(value: cst.BaseExpression) -> bool:
    """A container literal that constructs a class (``nn.Linear(...)``, ``Block(...)``):
    without the run's word on which list holds the layers, only such a list is wrapped."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            name = dotted(node.func)
            found = found or bool(name and name.split(".")[-1][:1].isupper())

    value.visit(Finder())
    return found


def _nn(ctx: PatchContext) -> str:
    for node in ctx.script.nodes(cst.ImportFrom):
        if dotted(node.module) == "torch" and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                if alias.name.value == "nn":
                    return alias.asname.name.value if alias.asname else "nn"
    return f"{ctx.torch_name()}.nn"


# -- the loss call ---------------------------------------------------------------------------


@patcher("remove-softmax-before-cross-entropy")
def remove_softmax(ctx: PatchContext) -> Patched:
    script = ctx.script
    layers = [c for c in script.calls("Softmax") if isinstance(c.func, cst.Attribute | cst.Name)]
    calls = [c for c in script.calls("softmax") if c.args or isinstance(c.func, cst.Attribute)]
    if len(layers) + len(calls) != 1:
        raise NoPatch(
            "no softmax in the script"
            if not layers and not calls
            else f"{len(layers) + len(calls)} softmaxes in the script: remove the one whose "
            "output goes to the loss, as in the example"
        )
    edit = ctx.edit()
    if layers:
        edit.replace(layers[0], cst.Call(func=_renamed(layers[0].func, "Identity")))
        what = f"replaces the Softmax layer on line {script.line(layers[0])} with Identity"
    else:
        call = calls[0]
        functional = not isinstance(call.func, cst.Attribute) or (
            dotted(call.func.value) in _imported_names(script)
        )
        if functional and not call.args:
            raise NoPatch(f"the softmax on line {script.line(call)} names no input")
        edit.replace(call, call.args[0].value if functional else call.func.value)
        what = f"drops the softmax on line {script.line(call)}"
    return Patched(
        edit.result(),
        f"{what}: the loss applies log_softmax itself (use softmax only where probabilities "
        "are read, e.g. at inference)",
    )


def _imported_names(script: Script) -> set[str]:
    """Names the imports bind (``torch``, ``F``, ``torch.nn.functional``): a ``softmax`` called
    on one of them is the functional form, whose first argument is the tensor."""
    names = set()
    for node in script.nodes((cst.Import, cst.ImportFrom)):
        if isinstance(node.names, cst.ImportStar):
            continue
        for alias in node.names:
            bound = alias.asname.name if alias.asname else alias.name
            names.add(dotted(bound))
    return names - {None}


def _renamed(func: cst.BaseExpression, name: str) -> cst.BaseExpression:
    if isinstance(func, cst.Attribute):
        return func.with_changes(attr=cst.Name(name))
    return cst.Name(name)


def _loss_calls(script: Script, names: tuple[str, ...]) -> list[cst.Call]:
    """Calls of these losses: functional ones by name, modules through the names they are
    bound to (``criterion = nn.CrossEntropyLoss()`` then ``criterion(out, y)``)."""
    modules = tuple(n for n in names if n[:1].isupper())
    functional = tuple(n for n in names if not n[:1].isupper())
    found = [c for c in script.calls(*functional) if len(c.args) >= 2] if functional else []
    bound = {script.assigned_name(c) for c in script.calls(*modules)} if modules else set()
    found += [c for c in script.nodes(cst.Call) if len(c.args) >= 2 and dotted(c.func) in bound]
    return found


def _one_loss(ctx: PatchContext, names: tuple[str, ...], what: str) -> cst.Call:
    calls = _loss_calls(ctx.script, names)
    if len(calls) != 1:
        raise NoPatch(
            f"no {what} call with an input and a target in the script"
            if not calls
            else f"{len(calls)} {what} calls: apply the example to the training loss"
        )
    return calls[0]


@patcher("fix-loss-dimension")
def fix_loss_dimension(ctx: PatchContext) -> Patched:
    call = _one_loss(ctx, CROSS_ENTROPY, "cross_entropy")
    seen = _loss_note(ctx, "cross_entropy")
    if seen is not None and seen.input_shape and len(seen.input_shape) < 3:
        raise NoPatch(
            f"the loss's input had shape {tuple(seen.input_shape)}, no class axis to move"
        )
    soft = seen is not None and seen.target_shape == seen.input_shape and bool(seen.input_shape)
    edit = ctx.edit()
    first, second = call.args[0].value, call.args[1].value
    edit.replace(first, f"{_wrapped(first)}.movedim(-1, 1)")
    if soft:
        edit.replace(second, f"{_wrapped(second)}.movedim(-1, 1)")
    both = " and the (soft) target's" if soft else ""
    return Patched(
        edit.result(),
        f"moves the input's{both} last axis, the class scores, to dim 1, where cross_entropy "
        "reads the classes",
    )


@patcher("fix-target-shape")
def fix_target_shape(ctx: PatchContext) -> Patched:
    seen = next(
        (x for x in (ctx.report.learning.losses if ctx.report.learning else []) if x.broadcast),
        None,
    )
    if seen is not None and seen.function.startswith("hand-written"):
        return _hand_written_target_shape(ctx, seen.function)
    if seen is None or not seen.input_shape or not seen.target_shape:
        raise NoPatch("the run recorded no broadcast loss with its shapes")
    call = _one_loss(ctx, (seen.function, *TARGET_LOSSES), seen.function)
    inp, target = seen.input_shape, seen.target_shape
    index = 0 if len(inp) == len(target) + 1 and inp[-1] == 1 else None
    if index is None and len(target) == len(inp) + 1 and target[-1] == 1:
        index = 1
    if index is None:
        raise NoPatch(
            f"input {tuple(inp)} and target {tuple(target)} differ by more than a trailing 1"
        )
    value = call.args[index].value
    edit = ctx.edit()
    edit.replace(value, f"{_wrapped(value)}.squeeze(-1)")
    which = "input" if index == 0 else "target"
    return Patched(
        edit.result(),
        f"squeezes the {which}'s trailing 1 so input {tuple(inp)} and target "
        f"{tuple(target)} are compared element by element",
    )


def _hand_written_target_shape(ctx: PatchContext, function: str) -> Patched:
    """The script's one ``(a - b) ** 2`` (or ``abs(a - b)``): ``b`` is reshaped as ``a``, so
    prediction and target are compared element by element whichever side each is on."""
    script = ctx.script
    found = [
        node
        for node in script.nodes(cst.BinaryOperation)
        if isinstance(node.operator, cst.Subtract) and _squared_or_abs(script, node)
    ]
    if len(found) != 1:
        raise NoPatch(
            f"{len(found)} `(a - b) ** 2` or `abs(a - b)` in the script: reshape the target as "
            f"the prediction where the {function} is computed"
        )
    sub = found[0]
    edit = ctx.edit()
    edit.replace(sub.right, f"{_wrapped(sub.right)}.reshape_as({code_of(sub.left)})")
    return Patched(
        edit.result(),
        f"reshapes {code_of(sub.right)} as {code_of(sub.left)} on line {script.line(sub)}, so "
        f"the {function} compares each prediction with its own target",
    )


def _squared_or_abs(script: Script, node: cst.CSTNode) -> bool:
    parent = script.parent(node)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Power):
        return parent.left is node and code_of(parent.right).strip() == "2"
    if isinstance(parent, cst.Arg):
        call = script.parent(parent)
        return isinstance(call, cst.Call) and (dotted(call.func) or "").split(".")[-1] == "abs"
    return False


def _loss_note(ctx: PatchContext, function: str):
    losses = ctx.report.learning.losses if ctx.report.learning else []
    return next((x for x in losses if x.function == function), None)


def _wrapped(expr: cst.BaseExpression) -> str:
    """The expression's code, in parentheses when a method call on it would bind wrongly."""
    text = code_of(expr)
    simple = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
    return text if isinstance(expr, simple) else f"({text})"
