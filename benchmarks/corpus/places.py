"""Edits many operators share: wrap the root model's output, change the learning rate, add
statements before training or after the model is built, change the data in place."""

from __future__ import annotations

import libcst as cst

from benchmarks.corpus.edit import Editor, expr
from benchmarks.corpus.operators import Mutant, Skip
from benchmarks.corpus.source import Script, assigned_name, call_name, dotted, walk


def forward_return(script: Script) -> tuple[str, cst.Return] | Skip:
    """The root model's variable name and the last top-level ``return`` of its forward."""
    root = script.root()
    if root is None or root[1] is None or root[1].forward is None:
        return Skip("no model class with a forward in the script")
    returns = [s for s in root[1].forward.body.body if isinstance(s, cst.SimpleStatementLine)]
    found = [s.body[0] for s in returns if isinstance(s.body[0], cst.Return)]
    if not found or found[-1].value is None:
        return Skip("the forward has no top-level return of a value")
    return root[0], found[-1]


def wrap_output(script: Script, template: str, what: str, fragment: str) -> Mutant | Skip:
    """The root forward returns ``template.format(output)`` (the first element of a tuple)."""
    place = forward_return(script)
    if isinstance(place, Skip):
        return place
    _, ret = place
    value = ret.value
    assert value is not None
    if isinstance(value, cst.Tuple):
        first = value.elements[0]
        new_first = first.with_changes(value=expr(template.format(_code(first.value))))
        new_value: cst.BaseExpression = value.with_changes(
            elements=[new_first, *value.elements[1:]]
        )
    else:
        new_value = expr(template.format(_code(value)))
    code = Editor(script.tree).replace(ret, ret.with_changes(value=new_value)).apply()
    return Mutant(code, what, producer=fragment, module="")


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def number(node: cst.BaseExpression) -> float | None:
    if isinstance(node, (cst.Float, cst.Integer)):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number(node.expression)
        return None if inner is None else -inner
    return None


def literal(value: float) -> cst.BaseExpression:
    return expr(repr(float(value)))


def lr_sites(script: Script) -> list[tuple[cst.BaseExpression, float, str]]:
    """Each learning-rate literal the training reads, with its value and the optimizer's class:
    an ``lr=`` of an optimizer (or the constant it names), ``learning_rate=`` of a framework's
    arguments, or a hand-written update's ``lr = ...``."""
    sites = []
    for call in script.optimizer_calls():
        kind = call_name(call)
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "lr":
                sites.extend(_literal_of(script, arg.value, kind))
    for call in script.calls("TrainingArguments"):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "learning_rate":
                sites.extend(_literal_of(script, arg.value, "AdamW"))
    if not sites and not script.optimizer_calls():
        for stmt in script.assignments("lr"):
            sites.extend(_literal_of(script, stmt.body[0].value, "hand-written"))  # type: ignore[union-attr]
    return sites


def _literal_of(script: Script, node: cst.BaseExpression, kind: str):
    if number(node) is not None:
        return [(node, number(node), kind)]
    value = script.value_of(node.value) if isinstance(node, cst.Name) else None
    if value is not None and number(value) is not None:
        return [(value, number(value), kind)]
    return []


def scale_lr(script: Script, factor_of: dict[str, float], what: str) -> Mutant | Skip:
    """Multiply every learning-rate literal by its optimizer kind's factor."""
    sites = [(n, v, k) for n, v, k in lr_sites(script) if k in factor_of or "*" in factor_of]
    if not sites:
        return Skip("no learning-rate literal of a fitting optimizer")
    editor = Editor(script.tree)
    for node, value, kind in sites:
        editor.replace(node, literal(value * factor_of.get(kind, factor_of.get("*", 1.0))))
    return Mutant(editor.apply(), what)


def before_training(script: Script, *code: str) -> Editor | Skip:
    training = script.training_stmt()
    if training is None:
        return Skip("no training loop or fit call found")
    return Editor(script.tree).insert_before(training, *code)


def root_stmt(script: Script) -> tuple[str, cst.SimpleStatementLine] | Skip:
    root = script.root()
    if root is None:
        return Skip("no model built in the script")
    return root[0], script.assignments(root[0])[0]


def data_tensor(script: Script, which: int, want: str) -> str | Skip:
    """The features (0) or labels (1) tensor as it exists before training, if of kind ``want``."""
    name = script.tensor_before_training(script.data_names()[which])
    if name is None:
        return Skip(f"no {('feature', 'label')[which]} tensor found before training")
    kind = script.kind(script.value_of(name, first=True))
    if kind != want:
        return Skip(f"{name} is {kind}, not {want}")
    return name


def optimizer_keywords(call: cst.Call) -> dict[str, cst.Arg]:
    return {a.keyword.value: a for a in call.args if a.keyword is not None}


def model_source(script: Script) -> str:
    root = script.root()
    if root is None or root[1] is None:
        return ""
    return _code(root[1].node)


def first_loop_stmt(script: Script, method: str) -> cst.SimpleStatementLine | None:
    """The first ``OPT.method(...)`` statement on one of the script's optimizers."""
    stmts = script.loop_calls(method, set(script.optimizer_names()))
    return stmts[0] if stmts else None


def model_call_stmt(script: Script) -> cst.SimpleStatementLine | None:
    """The loop's statement that calls the root model (``logits = model(x)``)."""
    root = script.root()
    loop = script.loop()
    if root is None or loop is None:
        return None
    for node in walk(loop):
        if isinstance(node, cst.SimpleStatementLine) and assigned_name(node):
            value = node.body[0].value  # type: ignore[union-attr]
            if isinstance(value, cst.Call) and dotted(value.func) == root[0]:
                return node
    return None
