"""Faults that make an inf or nan: a learning rate far too high, out-of-domain math in the
model's forward or the loss, float16 overflow, non-finite data, a blown-up initialisation."""

from __future__ import annotations

import random

import libcst as cst

from benchmarks.corpus.edit import Editor
from benchmarks.corpus.operators import Mutant, Skip, operator
from benchmarks.corpus.places import (
    before_training,
    data_tensor,
    model_call_stmt,
    root_stmt,
    scale_lr,
    wrap_output,
)
from benchmarks.corpus.source import Script, dotted


@operator(
    "lr-far-too-high",
    "lr-too-high",
    ("lower-learning-rate", "enable-grad-clipping", "add-lr-warmup"),
)
def lr_far_too_high(script: Script, rng: random.Random) -> Mutant | Skip:
    factor = rng.choice([1e3, 3e3, 1e4])
    return scale_lr(
        script,
        {"SGD": factor, "hand-written": factor, "Adam": factor * 10, "AdamW": factor * 10},
        f"every learning rate multiplied by {factor:g} (x10 more for Adam)",
    )


@operator("log-of-relu", "log-domain", ("stabilize-log",))
def log_of_relu(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script, "torch.log(torch.relu({}))", "the model returns log(relu(output))", "torch.log("
    )


@operator("sqrt-of-signed", "sqrt-at-zero", ("guard-sqrt",))
def sqrt_of_signed(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script, "torch.sqrt({})", "the model returns sqrt of its signed output", "torch.sqrt("
    )


@operator("fractional-power", "pow-negative-base", ("guard-pow", "clamp-into-domain"))
def fractional_power(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script, "({}) ** 1.5", "the model returns its signed output to the power 1.5", "** 1.5"
    )


@operator("acos-unbounded", "domain-edge", ("clamp-into-domain",))
def acos_unbounded(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script,
        "torch.acos({} + 1.0)",
        "the model returns acos(output + 1), past 1 for any positive output",
        "torch.acos(",
    )


@operator("divide-by-zero-min", "division-by-zero", ("guard-division",))
def divide_by_zero_min(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script,
        "({0}) / torch.relu({0}).amin(dim=-1, keepdim=True)",
        "the model divides its output by the row minimum of relu(output), which is 0",
        ".amin(dim=-1",
    )


@operator("exp-unscaled", "exp-overflow", ("stabilize-exp",))
def exp_unscaled(script: Script, rng: random.Random) -> Mutant | Skip:
    scale = rng.choice([300.0, 1000.0])
    return wrap_output(
        script,
        f"torch.exp(({{}}) * {scale})",
        f"the model returns exp(output * {scale:g})",
        "torch.exp(",
    )


@operator("exp-float16", "exp-overflow", ("upcast-to-fp32", "use-bf16", "stabilize-exp"))
def exp_float16(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script,
        "torch.exp(({}).half() * 20.0).float()",
        "the model returns exp(20 * output) computed in float16",
        "torch.exp(",
    )


@operator("masked-row-softmax", "fully-masked-row", ("finite-mask-value",))
def masked_row_softmax(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script,
        "({0}).masked_fill(torch.zeros_like({0}, dtype=torch.bool).index_fill(0, "
        'torch.tensor([0]), True), float("-inf")).softmax(-1)',
        "the output's first sample is masked entirely with -inf before a softmax",
        ".softmax(-1)",
    )


@operator("loss-over-no-valid", "division-by-zero", ("guard-division",))
def loss_over_no_valid(script: Script, rng: random.Random) -> Mutant | Skip:
    name, stmt = script.loss_name(), script.loss_stmt()
    if name is None or stmt is None:
        return Skip("no loss assigned before its backward()")
    code = (
        Editor(script.tree)
        .insert_after(
            stmt,
            f"valid = torch.zeros_like({name})",
            f"{name} = ({name} * valid).sum() / valid.sum()",
        )
        .apply()
    )
    return Mutant(
        code, "the loss is averaged over a mask with no valid element", producer="/ valid.sum()"
    )


@operator("nan-in-inputs", "nonfinite-input", ("sanitize-inputs",))
def nan_in_inputs(script: Script, rng: random.Random) -> Mutant | Skip:
    name = data_tensor(script, 0, "float")
    if isinstance(name, Skip):
        return name
    row = rng.randrange(1, 8)
    edit = before_training(script, f'{name}[{row}] = float("nan")')
    if isinstance(edit, Skip):
        return edit
    return Mutant(edit.apply(), f"row {row} of the features {name} is nan")


@operator("nan-in-targets", "nonfinite-targets", ("sanitize-inputs",))
def nan_in_targets(script: Script, rng: random.Random) -> Mutant | Skip:
    name = data_tensor(script, 1, "float")
    if isinstance(name, Skip):
        return name
    if data_tensor(script, 0, "float") == name:
        return Skip("the targets are the inputs")
    row = rng.randrange(1, 8)
    edit = before_training(script, f'{name}[{row}] = float("nan")')
    if isinstance(edit, Skip):
        return edit
    return Mutant(edit.apply(), f"row {row} of the float targets {name} is nan")


@operator("init-blown-up", "bad-initialization", ("fix-initialization",))
def init_blown_up(script: Script, rng: random.Random) -> Mutant | Skip:
    place = root_stmt(script)
    if isinstance(place, Skip):
        return place
    root, stmt = place
    scale = rng.choice([1e20, 1e30])
    code = (
        Editor(script.tree)
        .insert_after(
            stmt,
            f"with torch.no_grad():\n    for p in {root}.parameters():\n        p.mul_({scale!r})",
        )
        .apply()
    )
    return Mutant(code, f"every weight is multiplied by {scale:g} after the model is built")


@operator(
    "fp16-autocast-raw-inputs", "fp16-overflow", ("use-bf16", "upcast-to-fp32", "sanitize-inputs")
)
def fp16_autocast_raw_inputs(script: Script, rng: random.Random) -> Mutant | Skip:
    name = data_tensor(script, 0, "float")
    if isinstance(name, Skip):
        return name
    call_stmt = model_call_stmt(script)
    if call_stmt is None:
        return Skip("no statement in the loop calls the model")
    scale = rng.choice([1e5, 3e5])
    autocasts = [
        c
        for c in script.calls("autocast")
        if any(dotted(a.value) == "torch.bfloat16" for a in c.args)
    ]
    editor = before_training(script, f"{name}.mul_({scale!r})")
    if isinstance(editor, Skip):
        return editor
    if autocasts:
        for call in autocasts:
            for arg in call.args:
                if dotted(arg.value) == "torch.bfloat16":
                    editor.replace(arg.value, cst.parse_expression("torch.float16"))
    elif any(c for c in script.calls("autocast")):
        return Skip("an autocast of another dtype already runs")
    else:
        editor.replace(
            call_stmt,
            lambda updated: cst.parse_statement(
                'with torch.autocast("cpu", dtype=torch.float16):\n'
                f"    {cst.Module([]).code_for_node(updated).strip()}\n"
            ),
        )
    return Mutant(
        editor.apply(), f"raw features (x{scale:g}) go through the model under float16 autocast"
    )


@operator(
    "fp16-norm-eps", "eps-below-dtype", ("representable-eps", "upcast-to-fp32", "guard-division")
)
def fp16_norm_eps(script: Script, rng: random.Random) -> Mutant | Skip:
    return wrap_output(
        script,
        "(lambda h: (h / (h.norm(dim=-1, keepdim=True) + 1e-8)).float())("
        "({}).half().index_fill(0, torch.tensor([0]), 0.0))",
        "the output is normalised in float16 with eps 1e-8 (0 in float16); its first sample is 0",
        "+ 1e-8",
    )


@operator("labels-all-ignored", "all-targets-ignored", ("guard-ignored-targets", "sanitize-inputs"))
def labels_all_ignored(script: Script, rng: random.Random) -> Mutant | Skip:
    name = data_tensor(script, 1, "int")
    if isinstance(name, Skip):
        return name
    if not script.loss_calls("cross_entropy") and "num_labels" not in script.code:
        return Skip("the labels are not class indices of a cross-entropy")
    edit = before_training(script, f"{name}.fill_(-100)")
    if isinstance(edit, Skip):
        return edit
    return Mutant(edit.apply(), f"every label of {name} is the ignore index -100")
