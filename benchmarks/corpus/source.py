"""What a base script offers fault operators, read from its syntax tree (libcst).

Operators never hold per-base knowledge: they ask a ``Script`` for the places they act on (the
optimizer's construction, the training loop's calls, the root model's forward, the feature and
label tensors) and edit the tree there. Anything a script does not have is ``None``, and the
operator that needs it is skipped for that script.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst

T = TypeVar("T")
OPTIMIZERS = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS", "NAdam", "RAdam"}
MODULE_BASES = {"Module", "LightningModule"}
FLOAT_MAKERS = {"randn", "rand", "linspace", "randn_like", "rand_like", "sin", "cos", "float"}
INT_MAKERS = {"randint", "arange", "long", "int", "argmax", "full", "randperm"}


def dotted(node: cst.CSTNode) -> str:
    """``torch.optim.Adam`` for an attribute chain, ``""`` for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = dotted(node.value)
        return f"{head}.{node.attr.value}" if head else ""
    return ""


def call_name(node: cst.CSTNode) -> str:
    """The last part of a call's function name (``cross_entropy``), ``""`` if not a call."""
    if not isinstance(node, cst.Call):
        return ""
    if isinstance(node.func, cst.Attribute):
        return node.func.attr.value
    name = dotted(node.func)
    return name.rsplit(".", 1)[-1] if name else ""


def memo(method: Callable[[Script], T]) -> Callable[[Script], T]:
    """A no-argument method of a ``Script`` computed once (the tree never changes)."""

    def cached(self: Script) -> T:
        if method.__name__ not in self._memo:
            self._memo[method.__name__] = method(self)
        return self._memo[method.__name__]  # type: ignore[return-value]

    cached.__doc__ = method.__doc__
    return cached


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below ``node``, in source order, ``node`` first."""
    yield node
    for child in node.children:
        yield from walk(child)


def assigned_name(stmt: cst.CSTNode) -> str | None:
    """``x`` for a simple line ``x = ...``."""
    if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign):
        targets = stmt.body[0].targets
        if len(targets) == 1 and isinstance(targets[0].target, cst.Name):
            return targets[0].target.value
    return None


def expr_call(stmt: cst.CSTNode) -> cst.Call | None:
    """The call of a simple line that is one expression statement, e.g. ``loss.backward()``."""
    if (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, cst.Call)
    ):
        return stmt.body[0].value
    return None


@dataclass
class ModelClass:
    """A class deriving from ``nn.Module`` (or a LightningModule) defined in the script."""

    node: cst.ClassDef
    forward: cst.FunctionDef | None
    init: cst.FunctionDef | None

    @property
    def name(self) -> str:
        return self.node.name.value

    def forward_params(self) -> list[str]:
        if self.forward is None:
            return []
        return [p.name.value for p in self.forward.params.params if p.name.value != "self"]

    def submodules(self) -> list[str]:
        """Attribute names given a module-making call in ``__init__``, in order."""
        names = []
        for node in walk(self.init) if self.init else ():
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                target = node.targets[0].target
                maker = dotted(node.value.func)
                if (
                    isinstance(target, cst.Attribute)
                    and dotted(target.value) == "self"
                    and maker.split(".")[0] in {"nn", "torch"}
                ):
                    names.append(target.attr.value)
        return names


@dataclass
class Script:
    """One parsed base script and the places in it."""

    tree: cst.Module
    classes: dict[str, ModelClass] = field(default_factory=dict)
    _nodes: list[cst.CSTNode] | None = None
    _below: dict[int, set[int]] = field(default_factory=dict)
    _parents: dict[int, cst.CSTNode] = field(default_factory=dict)
    _memo: dict[str, object] = field(default_factory=dict)

    @classmethod
    def parse(cls, code: str) -> Script:
        script = cls(cst.parse_module(code))
        for node in walk(script.tree):
            if isinstance(node, cst.ClassDef) and any(
                dotted(b.value).rsplit(".", 1)[-1] in MODULE_BASES for b in node.bases
            ):
                body = [s for s in node.body.body if isinstance(s, cst.FunctionDef)]
                by_name = {f.name.value: f for f in body}
                script.classes[node.name.value] = ModelClass(
                    node, by_name.get("forward"), by_name.get("__init__")
                )
        return script

    @property
    def code(self) -> str:
        return self.tree.code

    def nodes(self) -> list[cst.CSTNode]:
        """Every node of the tree in source order (the tree never changes: read once)."""
        if self._nodes is None:
            self._nodes = list(walk(self.tree))
        return self._nodes

    def statement_of(self, target: cst.CSTNode) -> cst.BaseStatement | None:
        """The innermost statement (a simple line or a compound statement) holding ``target``."""
        if not self._parents:
            for node in self.nodes():
                for child in node.children:
                    self._parents[id(child)] = node
        node: cst.CSTNode | None = target
        while node is not None and not isinstance(node, cst.BaseStatement):
            node = self._parents.get(id(node))
        return node

    def calls(self, *last_names: str) -> list[cst.Call]:
        """Calls whose function's last name is one of ``last_names``, in source order."""
        return [n for n in self.nodes() if isinstance(n, cst.Call) and call_name(n) in last_names]

    def assignments(self, name: str) -> list[cst.SimpleStatementLine]:
        return [
            n
            for n in self.nodes()
            if isinstance(n, cst.SimpleStatementLine) and assigned_name(n) == name
        ]

    def value_of(self, name: str, first: bool = False) -> cst.BaseExpression | None:
        """The expression last (or first) assigned to ``name`` (anywhere in the script)."""
        stmts = self.assignments(name)
        if not stmts:
            return None
        assign = stmts[0 if first else -1].body[0]
        assert isinstance(assign, cst.Assign)
        return assign.value

    # -- the optimizer -------------------------------------------------------------------
    @memo
    def optimizer_calls(self) -> list[cst.Call]:
        return [
            c
            for c in self.calls(*OPTIMIZERS)
            if dotted(c.func).startswith(("torch.optim.", "optim."))
        ]

    @memo
    def optimizer_names(self) -> list[str]:
        names = []
        for call in self.optimizer_calls():
            stmt = self.statement_of(call)
            if stmt is not None and (name := assigned_name(stmt)):
                names.append(name)
        return names

    # -- the model -----------------------------------------------------------------------
    @memo
    def root(self) -> tuple[str, ModelClass | None] | None:
        """The first model the script builds: its variable name and its class (``None`` for a
        model built from library classes, e.g. ``nn.Sequential`` or a transformers model)."""
        for node in self.nodes():
            if not isinstance(node, cst.SimpleStatementLine) or not (name := assigned_name(node)):
                continue
            value = node.body[0].value  # type: ignore[union-attr]
            if not isinstance(value, cst.Call):
                continue
            maker = dotted(value.func)
            if maker in self.classes:
                return name, self.classes[maker]
            if maker.endswith(("Sequential", "ForSequenceClassification", "LMHeadModel")):
                return name, None
        return None

    # -- the training loop ---------------------------------------------------------------
    @memo
    def backward_stmts(self) -> list[cst.SimpleStatementLine]:
        return [
            s
            for s in self.nodes()
            if isinstance(s, cst.SimpleStatementLine)
            and (call := expr_call(s)) is not None
            and call_name(call) == "backward"
        ]

    @memo
    def loop(self) -> cst.For | None:
        """The outermost ``for`` that holds a ``backward()`` call or an optimizer's step."""
        marks = [*self.backward_stmts(), *self.step_calls()]
        for node in self.nodes():
            if isinstance(node, cst.For) and any(self.inside(m, node) for m in marks):
                return node
        return None

    @memo
    def step_calls(self) -> list[cst.Call]:
        """``optimizer.step(...)`` and ``scaler.step(optimizer)`` calls, statements or not."""
        names = set(self.optimizer_names())
        out = []
        for call in self.calls("step"):
            receiver = dotted(call.func.value) if isinstance(call.func, cst.Attribute) else ""
            args = [dotted(a.value) for a in call.args]
            if receiver in names or any(a in names for a in args):
                out.append(call)
        return out

    def inside(self, node: cst.CSTNode, outer: cst.CSTNode | None) -> bool:
        if outer is None:
            return False
        if id(outer) not in self._below:
            self._below[id(outer)] = {id(n) for n in walk(outer)}
        return id(node) in self._below[id(outer)]

    def tensor_before_training(self, name: str | None) -> str | None:
        """The tensor that exists before training starts and ``name`` reads from: ``data`` for
        a loop's ``x = data[idx]``; ``name`` itself when it is made before the loop."""
        training = self.training_stmt()
        for _ in range(5):
            if name is None:
                return None
            stmts = self.assignments(name)
            if not stmts:
                return None
            if not self.inside(stmts[0], training):
                return name
            name = base_name(stmts[0].body[0].value)  # type: ignore[union-attr]
        return None

    @memo
    def training_stmt(self) -> cst.BaseStatement | None:
        """The statement that trains: the loop, else a framework's ``fit``/``train`` call."""
        if (loop := self.loop()) is not None:
            return loop
        for call in self.calls("fit", "train"):
            if call.args:  # trainer.fit(model, loader), not model.train()
                return self.statement_of(call)
            if dotted(call.func).startswith("trainer."):
                return self.statement_of(call)
        return None

    def loop_calls(
        self, method: str, receivers: set[str] | None = None
    ) -> list[cst.SimpleStatementLine]:
        """Expression statements ``X.method(...)`` anywhere in the script, X in ``receivers``."""
        out = []
        for s in self.nodes():
            call = expr_call(s) if isinstance(s, cst.SimpleStatementLine) else None
            if (
                call is None
                or call_name(call) != method
                or not isinstance(call.func, cst.Attribute)
            ):
                continue
            receiver = dotted(call.func.value)
            if receivers is None or receiver in receivers:
                out.append(s)  # type: ignore[arg-type]
        return out

    def position(self, node: cst.CSTNode) -> int:
        """Where ``node`` comes in source order."""
        return next(i for i, n in enumerate(self.nodes()) if n is node)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        self.statement_of(node)  # builds the parent map
        return self._parents.get(id(node))

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        here = self.parent(node)
        while here is not None and not isinstance(here, cst.FunctionDef):
            here = self.parent(here)
        return here

    @memo
    def loss_stmt(self) -> cst.SimpleStatementLine | None:
        """The last assignment of the backward()'s loss before that call, in its function."""
        name, backward = self.loss_name(), self.backward_stmts()
        if name is None or not backward:
            return None
        where = self.position(backward[0])
        stmts = [
            s
            for s in self.assignments(name)
            if self.position(s) < where and self.function_of(s) is self.function_of(backward[0])
        ]
        return stmts[-1] if stmts else None

    @memo
    def loss_name(self) -> str | None:
        """The variable whose ``backward()`` the loop calls (``loss`` of ``loss.backward()``)."""
        for stmt in self.backward_stmts():
            call = expr_call(stmt)
            assert call is not None and isinstance(call.func, cst.Attribute)
            receiver = call.func.value
            if isinstance(receiver, cst.Name):
                return receiver.value
            if isinstance(receiver, cst.Call) and receiver.args:  # scaler.scale(loss)
                inner = receiver.args[0].value
                if isinstance(inner, cst.Name):
                    return inner.value
        return None

    # -- the data ------------------------------------------------------------------------
    @memo
    def data_names(self) -> tuple[str | None, str | None]:
        """The feature and label tensors the training reads, as the script names them."""
        for call in self.calls("TensorDataset"):
            args = [a.value for a in call.args]
            if len(args) == 2 and all(isinstance(a, cst.Name) for a in args):
                return args[0].value, args[1].value  # type: ignore[union-attr]
        features = labels = None
        root = self.root()
        if root is not None:
            for call in self.calls(root[0]):
                if call.args:
                    features = base_name(call.args[0].value)
                    break
        for call in self.loss_calls():
            if len(call.args) >= 2:
                labels = base_name(call.args[1].value)
                break
        for node in self.nodes():
            if labels is None and isinstance(node, cst.DictElement):
                key = node.key
                if isinstance(key, cst.SimpleString) and key.evaluated_value == "labels":
                    labels = base_name(node.value)
        return features, labels

    def loss_calls(self, *kinds: str) -> list[cst.Call]:
        """Calls that compute a loss: functional losses, and calls of a name bound to a loss
        module (``criterion = nn.CrossEntropyLoss()``); ``kinds`` narrows them (``cross_entropy``,
        ``mse``, ``bce``)."""
        wanted = set(kinds) or set(LOSSES.values())
        bound = {}
        for node in self.nodes():
            if isinstance(node, cst.SimpleStatementLine) and (name := assigned_name(node)):
                maker = call_name(node.body[0].value)  # type: ignore[union-attr]
                if maker in LOSS_MODULES:
                    bound[name] = LOSS_MODULES[maker]
        out = []
        for node in self.nodes():
            if not isinstance(node, cst.Call):
                continue
            kind = LOSSES.get(call_name(node)) or bound.get(dotted(node.func))
            if kind in wanted:
                out.append(node)
        return out

    def kind(self, expr: cst.BaseExpression | None, depth: int = 0) -> str:
        """``float``, ``int``, ``bool`` or ``?``: what dtype family a tensor expression makes."""
        if expr is None or depth > 8:
            return "?"
        if isinstance(expr, cst.Name):
            return self.kind(self.value_of(expr.value, first=True), depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.kind(expr.value, depth + 1)
        if isinstance(expr, cst.Comparison):
            return "bool"
        if isinstance(expr, cst.BinaryOperation):
            kinds = {self.kind(expr.left, depth + 1), self.kind(expr.right, depth + 1)}
            return "float" if "float" in kinds else ("int" if kinds == {"int"} else "?")
        if isinstance(expr, (cst.Float,)):
            return "float"
        if isinstance(expr, cst.Integer):
            return "int"
        if isinstance(expr, cst.Call):
            return self._call_kind(expr, depth)
        return "?"

    def _call_kind(self, expr: cst.Call, depth: int) -> str:
        name = call_name(expr)
        if name in FLOAT_MAKERS:
            return "float"
        if name in INT_MAKERS:
            return "int"
        if name == "cat" and expr.args and isinstance(expr.args[0].value, cst.List):
            elements = expr.args[0].value.elements
            return self.kind(elements[-1].value, depth + 1) if elements else "?"
        if isinstance(expr.func, cst.Attribute):  # x.flip(1), x.masked_fill(...)
            return self.kind(expr.func.value, depth + 1)
        return "?"


LOSSES = {
    "cross_entropy": "cross_entropy",
    "mse_loss": "mse",
    "binary_cross_entropy_with_logits": "bce",
}
LOSS_MODULES = {"CrossEntropyLoss": "cross_entropy", "MSELoss": "mse", "BCEWithLogitsLoss": "bce"}


def base_name(expr: cst.BaseExpression) -> str | None:
    """``y`` for ``y``, ``y[idx]``, ``y[b].reshape(-1)``: the tensor an argument reads."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and dotted(expr.func.value) not in {"torch", "nn", "F", "np"}
        ):
            expr = expr.func.value
        else:
            return None
