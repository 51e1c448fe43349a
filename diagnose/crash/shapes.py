"""shape-mismatch: a layer met an input of another size than it was built for.

From the live run: the layer (the module whose forward raised, its qualified name and
declared sizes), the input's shape, the module call upstream that produced that size (the
root model's forward re-run with every call recorded), and the constructor call in the
user's source whose number would fit. A reshape (``view``/``reshape``) and a loss given
tensors of different sizes are explained from the tensors the frames held.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Any

from diagnose.crash.live import Scene, module_name, shape, shape_text, statement_at
from diagnose.crash.origin import origin_site
from diagnose.crash.replay import Call, module_calls
from diagnose.crash.sources import Built, constructors, factors, literal_int
from diagnose.report import Crash, CrashEdit

FAMILY = "shape-mismatch"

PATTERNS = [
    re.compile(r"mat1 and mat2 shapes cannot be multiplied"),
    re.compile(r"expected input\[[\d, ]+\] to have \d+ channels, but got \d+ channels"),
    re.compile(r"running_mean should contain \d+ elements not \d+"),
    re.compile(r"Given normalized_shape=\[[\d, ]+\], expected input with shape"),
    re.compile(r"shape '\[[-\d, ]+\]' is invalid for input of size \d+"),
    re.compile(r"Expected input batch_size \(\d+\) to match target batch_size \(\d+\)"),
    re.compile(r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\)"),
    re.compile(r"Target size \(torch\.Size\(\[[\d, ]*\]\)\) must be the same as input size"),
    re.compile(r"size mismatch, got input \(\d+\), mat \(\d+x\d+\)"),
]


def matches(message: str) -> bool:
    return any(p.search(message) for p in PATTERNS)


@dataclass(frozen=True)
class Layer:
    """A layer kind: the size it checks, where that size sits in its constructor, and which
    dimension of the input must equal it."""

    size: str
    dim: int
    params: tuple[str, ...]  # constructor parameters in order, compared with the module's values


_CONV = Layer("in_channels", 1, ("in_channels", "out_channels"))
_NORM = Layer("num_features", 1, ("num_features",))
LAYERS = {
    "Linear": Layer("in_features", -1, ("in_features", "out_features")),
    "Bilinear": Layer("in1_features", -1, ("in1_features", "in2_features", "out_features")),
    "Conv1d": _CONV,
    "Conv2d": _CONV,
    "Conv3d": _CONV,
    "BatchNorm1d": _NORM,
    "BatchNorm2d": _NORM,
    "BatchNorm3d": _NORM,
    "LayerNorm": Layer("normalized_shape", -1, ("normalized_shape",)),
}


def _value(module: Any, attr: str) -> int | None:
    value = getattr(module, attr, None)
    if isinstance(value, tuple | list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, int) else None


def explain(scene: Scene) -> Crash:
    crash = Crash(family="shape-mismatch", chain=scene.chain())
    for module, frame in reversed(scene.module_frames()):
        layer = LAYERS.get(type(module).__name__)
        if layer is None:
            continue
        tensor = frame.f_locals.get("input")
        dims = shape(tensor)
        declared = _value(module, layer.size)
        if dims is None or declared is None or not dims:
            continue
        got = dims[layer.dim] if len(dims) > abs(layer.dim) or layer.dim == -1 else None
        if got is None or got == declared:
            continue
        _layer_crash(scene, crash, module, layer, dims, declared, got)
        return crash
    if _reshape_crash(scene, crash) or _loss_crash(scene, crash):
        return crash
    crash.checked.append(
        "no layer on the stack (Linear, Conv, BatchNorm, LayerNorm) met an input of another "
        "size, and the line is no view/reshape or loss call whose tensors could be read"
    )
    return crash


def _layer_crash(
    scene: Scene, crash: Crash, module: Any, layer: Layer, dims: list[int], declared: int, got: int
) -> None:
    root = scene.root_call()
    roots = [root[0]] if root else []
    name = module_name(module, roots)
    kind = type(module).__name__
    crash.module, crash.module_type = name, kind
    crash.sizes = {p: v for p in layer.params if (v := _value(module, p)) is not None}
    crash.input_shape, crash.expected, crash.got = dims, declared, got
    axis = "last dimension" if layer.dim == -1 else f"dimension {layer.dim}"
    crash.evidence.append(
        f"`{name}` = {kind}({', '.join(f'{k}={v}' for k, v in crash.sizes.items())}) was given "
        f"an input of shape {shape_text(dims)}: its {axis} is {got}, the layer expects {declared}"
    )
    calls = module_calls(*root) if root else []
    producer = _producer(calls, module, dims, layer)
    if producer is not None:
        crash.evidence.append(_producer_words(producer, got, declared))
    elif root is None:
        crash.checked.append("the model's forward was not on the stack: no call upstream re-run")
    files = [scene.script.__fspath__()] + [loc.file for loc in crash.chain]
    last = name.rsplit(".", 1)[-1]
    built = constructors(
        files,
        kind,
        [(i, p, crash.sizes[p]) for i, p in enumerate(layer.params) if p in crash.sizes],
        layer.params.index(layer.size),
        layer.size,
        last,
    )
    if len(built) != 1:
        crash.checked.append(
            f"{len(built)} {kind}(...) calls in the script agree with `{name}`'s sizes: "
            + ("none is patched" if built else "it is built elsewhere")
        )
        crash.evidence.append(_lazy_words(kind, layer, got))
        return
    site = built[0]
    crash.sites.append(site.site(f"`{name}` is built here"))
    value = _new_value(site, got, producer)
    if value is None:
        crash.checked.append(
            f"the {layer.size} of `{name}` on line {site.line} is not a plain number: not patched"
        )
        crash.evidence.append(_lazy_words(kind, layer, got))
        return
    crash.edit = CrashEdit(
        kind="layer-size", file=site.file, line=site.line, target=layer.size, value=value
    )


def _lazy_words(kind: str, layer: Layer, got: int) -> str:
    lazy = {
        "Linear": "nn.LazyLinear(out_features)",
        "Conv1d": "nn.LazyConv1d",
        "Conv2d": "nn.LazyConv2d",
    }
    hint = lazy.get(kind)
    text = f"set {layer.size} to {got} where the layer is built"
    return text + (
        f", or build it as {hint}, which takes its size from the first input" if hint else ""
    )


def _new_value(site: Built, got: int, producer: Call | None) -> str | None:
    """The text to put in the constructor: the producer's dimensions when the old argument
    was written as a product of as many factors, else the number itself."""
    arg = site.argument
    if arg is None or literal_int(arg) is None:
        return None
    old = factors(arg)
    if old and len(old) > 1 and producer is not None and producer.out:
        per_sample = producer.out[1:]
        if len(per_sample) == len(old) and math.prod(per_sample) == got:
            return " * ".join(str(d) for d in per_sample)
    return str(got)


def _contains(outer: Any, inner: Any) -> bool:
    return any(m is inner for m in outer.modules())


def _producer(calls: list[Call], module: Any, dims: list[int], layer: Layer) -> Call | None:
    """The last completed call before the crash whose output is the layer's input, as it is
    or flattened (its size per sample equal to the input's features)."""
    want = dims[layer.dim]
    for at in range(len(calls) - 1, -1, -1):
        call = calls[at]
        if call.module is module or _contains(call.module, module) or not call.out:
            continue
        if call.out == dims or (
            layer.dim == -1 and len(call.out) > 2 and math.prod(call.out[1:]) == want
        ):
            return _innermost(calls[:at], call)
    return None


def _innermost(earlier: list[Call], call: Call) -> Call:
    """The layer inside a container call (a Sequential) that made the container's output."""
    for inner in reversed(earlier):
        if inner.out != call.out or not _contains(call.module, inner.module):
            break
        call = inner
    return call


def _producer_words(call: Call, got: int, declared: int) -> str:
    kind = type(call.module).__name__
    out = call.out or []
    text = f"that input comes from `{call.name}` ({kind}), whose output has shape {shape_text(out)}"
    if len(out) > 2 and math.prod(out[1:]) == got:
        text += f": {' * '.join(str(d) for d in out[1:])} = {got} features once flattened"
    conv = _conv_words(call, out, declared)
    return text + conv


def _conv_words(call: Call, out: list[int], declared: int) -> str:
    module = call.module
    if not type(module).__name__.startswith(("Conv", "MaxPool", "AvgPool")) or not call.ins:
        return ""
    before = call.ins[0][2:]
    after = out[2:]
    if not before or before == after:
        return ""
    k = getattr(module, "kernel_size", None)
    p = getattr(module, "padding", None)
    s = getattr(module, "stride", None)
    text = (
        f"; kernel {_one(k)}, padding {_one(p)}, stride {_one(s)} turn "
        f"{'x'.join(map(str, before))} into {'x'.join(map(str, after))}"
    )
    if len(out) > 2 and out[1] * math.prod(before) == declared:
        text += f" (the layer's {declared} = {out[1]} * {' * '.join(map(str, before))}, the size before it)"
    return text


def _one(value: Any) -> str:
    if isinstance(value, tuple) and len(set(value)) == 1:
        value = value[0]
    return str(value)


_RESHAPE = re.compile(r"shape '\[([-\d, ]+)\]' is invalid for input of size (\d+)")


def _reshape_crash(scene: Scene, crash: Crash) -> bool:
    found = _RESHAPE.search(scene.message)
    at = scene.crash_frame()
    if found is None or at is None:
        return False
    frame, line = at
    stmt = statement_at(frame.f_code.co_filename, line)
    tensor = None
    if stmt is not None:
        for node in ast.walk(stmt[0]):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("view", "reshape")
                and isinstance(node.func.value, ast.Name)
            ):
                tensor = frame.f_locals.get(node.func.value.id)
                break
    dims = shape(tensor)
    asked = found.group(1).replace(" ", "")
    size = int(found.group(2))
    if dims is None:
        crash.evidence.append(f"a view/reshape to [{asked}] met {size} values")
        return True
    crash.input_shape = dims
    per = math.prod(dims[1:]) if len(dims) > 1 else size
    crash.got = per
    crash.evidence.append(
        f"the tensor reshaped on line {line} has shape {shape_text(dims)} ({size} values, "
        f"{per} per sample); [{asked}] does not divide it: flatten it with .flatten(1) and give "
        f"the next layer {per} features"
    )
    root = scene.root_call()
    if root is not None:
        calls = module_calls(*root)
        for at in range(len(calls) - 1, -1, -1):
            if calls[at].out == dims:
                crash.evidence.append(_producer_words(_innermost(calls[:at], calls[at]), per, -1))
                break
    return True


_BATCH = re.compile(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)")


def _loss_crash(scene: Scene, crash: Crash) -> bool:
    import torch

    message = scene.message
    if not (
        _BATCH.search(message)
        or "must be the same as input size" in message
        or "must match the size of tensor" in message
    ):
        return False
    inputs = scene.innermost_local("input", kind=torch.Tensor)
    target = scene.innermost_local("target", kind=torch.Tensor)
    if inputs is None or target is None:
        return False
    crash.input_shape = shape(inputs)
    crash.evidence.append(
        f"the loss was given an input of shape {shape_text(shape(inputs))} and a target of "
        f"shape {shape_text(shape(target))}"
    )
    for value, what in ((inputs, "the loss's input"), (target, "the target")):
        site = origin_site(scene, value, what=f"{what} is made here")
        if site is not None:
            crash.sites.append(site)
    _output_layer(scene, crash, shape(inputs) or [], shape(target) or [])
    return True


def _output_layer(scene: Scene, crash: Crash, got: list[int], want: list[int]) -> None:
    """When the loss's input and target differ in their last size only, the model's last
    Linear made that size: its out_features is the number to set."""
    import torch

    if len(got) != len(want) or not got or got[:-1] != want[:-1] or got[-1] == want[-1]:
        return
    at = scene.crash_frame()
    found = statement_at(at[0].f_code.co_filename, at[1]) if at else None
    if at is None or found is None:
        return
    frame = at[0]
    called = [
        (n.func.id, frame.f_locals.get(n.func.id, frame.f_globals.get(n.func.id)))
        for n in ast.walk(found[0])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    ]
    models = [(label, m) for label, m in called if isinstance(m, torch.nn.Module)]
    if len(models) != 1:
        return
    label, model = models[0]
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    if not linears or linears[-1][1].out_features != got[-1]:
        return
    name, layer = linears[-1]
    name = name or label  # the model is the layer itself: the script's name for it
    crash.module, crash.module_type = name, "Linear"
    crash.sizes = {"in_features": layer.in_features, "out_features": layer.out_features}
    crash.expected, crash.got = want[-1], got[-1]
    crash.evidence.append(
        f"the model's last layer `{name}` = Linear({layer.in_features}, {layer.out_features}) "
        f"makes {got[-1]} outputs; the target has {want[-1]}"
    )
    files = [str(scene.script)] + [loc.file for loc in crash.chain]
    built = constructors(
        files,
        "Linear",
        [(0, "in_features", layer.in_features), (1, "out_features", layer.out_features)],
        1,
        "out_features",
        name.rsplit(".", 1)[-1],
    )
    if len(built) != 1:
        return
    site = built[0]
    crash.sites.append(site.site(f"`{name}` is built here"))
    if literal_int(site.argument) is not None:
        crash.edit = CrashEdit(
            kind="layer-size",
            file=site.file,
            line=site.line,
            target="out_features",
            value=str(want[-1]),
        )
