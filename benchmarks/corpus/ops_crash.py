"""Faults that crash the script, explained from the live run: a graph cut before backward, a
label out of range, a dtype mismatch, an in-place change of a saved tensor, a layer size that
does not fit its input."""

from __future__ import annotations

import random

import libcst as cst

from benchmarks.corpus.edit import Editor, expr
from benchmarks.corpus.operators import Mutant, Skip, operator
from benchmarks.corpus.places import (
    before_training,
    data_tensor,
    model_call_stmt,
    root_stmt,
    wrap_output,
)
from benchmarks.corpus.source import Script, call_name


@operator("model-frozen", "graph-cut-before-backward", ("restore-gradient-flow",))
def model_frozen(script: Script, rng: random.Random) -> Mutant | Skip:
    place = root_stmt(script)
    if isinstance(place, Skip):
        return place
    if len(script.optimizer_names()) > 1:
        return Skip("another model's loss still has a graph (a GAN's discriminator)")
    root, stmt = place
    code = Editor(script.tree).insert_after(stmt, f"{root}.requires_grad_(False)").apply()
    return Mutant(code, "every parameter of the model is frozen before training")


@operator("forward-under-no-grad", "graph-cut-before-backward", ("restore-gradient-flow",))
def forward_under_no_grad(script: Script, rng: random.Random) -> Mutant | Skip:
    stmt = model_call_stmt(script)
    if stmt is None:
        return Skip("no statement in the loop calls the model")
    if len(script.optimizer_names()) > 1:
        return Skip("another model's loss still has a graph (a GAN's discriminator)")
    code = (
        Editor(script.tree)
        .replace(
            stmt,
            lambda updated: cst.parse_statement(
                f"with torch.no_grad():\n    {cst.Module([]).code_for_node(updated).strip()}\n"
            ),
        )
        .apply()
    )
    return Mutant(code, "the training forward runs under torch.no_grad()")


@operator("loss-detached", "graph-cut-before-backward", ("restore-gradient-flow",))
def loss_detached(script: Script, rng: random.Random) -> Mutant | Skip:
    name, stmt = script.loss_name(), script.loss_stmt()
    if name is None or stmt is None:
        return Skip("no loss assigned before its backward()")
    code = Editor(script.tree).insert_after(stmt, f"{name} = {name}.detach()").apply()
    return Mutant(code, "the loss is detached before backward()")


@operator("labels-one-based", "index-out-of-range", ("fix-label-range",))
def labels_one_based(script: Script, rng: random.Random) -> Mutant | Skip:
    name = data_tensor(script, 1, "int")
    if isinstance(name, Skip):
        return name
    if not script.loss_calls("cross_entropy") and "num_labels" not in script.code:
        return Skip("the labels are not class indices of a cross-entropy")
    edit = before_training(script, f"{name}.add_(1)")
    if isinstance(edit, Skip):
        return edit
    return Mutant(edit.apply(), f"the class labels {name} are shifted to start at 1")


@operator("model-in-float64", "dtype-mismatch", ("cast-dtype",))
def model_in_float64(script: Script, rng: random.Random) -> Mutant | Skip:
    if isinstance(data_tensor(script, 0, "float"), Skip):
        return Skip("the model does not read float features")
    place = root_stmt(script)
    if isinstance(place, Skip):
        return place
    root, stmt = place
    code = Editor(script.tree).insert_after(stmt, f"{root}.double()").apply()
    return Mutant(code, "the model is cast to float64; its float32 inputs are not")


@operator("inplace-on-saved", "inplace-modified-saved-tensor", ("make-op-out-of-place",))
def inplace_on_saved(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script,
        "torch.sigmoid({}).mul_(2.0)",
        "sigmoid's saved output is doubled in place",
        ".mul_(2.0)",
    )


@operator("layer-size-off-by-one", "shape-mismatch", ("fix-layer-size",))
def layer_size_off_by_one(script: Script, rng: random.Random) -> Mutant | Skip:
    for cls in script.classes.values():
        if cls.init is None:
            continue
        for call in script.calls("Linear"):
            if not script.inside(call, cls.init) or not call.args:
                continue
            first = call.args[0].value
            if isinstance(first, cst.Integer) and call_name(call) == "Linear":
                new = expr(str(int(first.value) + 1))
                code = Editor(script.tree).replace(first, new).apply()
                return Mutant(
                    code,
                    f"a Linear's in_features is {int(first.value) + 1}, one more than its input",
                )
    return Skip("no Linear with a literal in_features")
