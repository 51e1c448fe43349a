"""What the losses were given, read from the autograd graph the backward is about to run.

At a sampled backward the loss's graph is walked a few nodes deep to its loss nodes
(``NllLossBackward0``, ``MseLossBackward0``, ...), whose saved tensors and inputs say what the
loss was given: probabilities from a softmax or sigmoid where logits belong, an input that
was broadcast against a target of another shape, how many classes. Reading the graph needs
no wrapper around the loss functions, so the script's warnings keep their own lines.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from diagnose.report import LossInput

_LOOK_FIRST = 4
_LOOK_EVERY = 64
_WALK = 64  # graph nodes visited from the loss looking for loss nodes
_CLASS = {"NllLossBackward0": "nll_loss", "NllLoss2DBackward0": "nll_loss"}
_REGRESSION = {
    "MseLossBackward0": "mse_loss",
    "L1LossBackward0": "l1_loss",
    "SmoothL1LossBackward0": "smooth_l1_loss",
    "HuberLossBackward0": "huber_loss",
}
_LOGITS = {"BinaryCrossEntropyWithLogitsBackward0": "binary_cross_entropy_with_logits"}
_LINEAR = ("AddmmBackward0", "MmBackward0", "BmmBackward0", "UnsafeViewBackward0")
# ops between a linear layer and the loss that keep each element where it is: a bias, dropout,
# a temperature or a scale
_ELEMENTWISE = (
    "AddBackward0",
    "NativeDropoutBackward0",
    "MulBackward0",
    "DivBackward0",
    "MulBackward1",
    "DivBackward1",
)
_PLAIN_VIEWS = ("ViewBackward0", "ReshapeAliasBackward0", "CloneBackward0", "ToCopyBackward0")
# a loss written by hand: (input - target) ** 2 or |input - target|, named after what it is
_HAND = {
    "PowBackward0": "hand-written squared error",
    "AbsBackward0": "hand-written absolute error",
}
_SOFT = "LogSoftmaxBackward0"  # cross_entropy with class-probability targets: no nll node
_PRODUCERS = {"SoftmaxBackward0": "softmax", "SigmoidBackward0": "sigmoid"}
_BOUNDED = {"SigmoidBackward0": "sigmoid", "TanhBackward0": "tanh"}
_VIEWS = (
    "ViewBackward0",
    "ReshapeAliasBackward0",
    "UnsafeViewBackward0",
    "PermuteBackward0",
    "TransposeBackward0",
    "SqueezeBackward0",
    "SqueezeBackward1",
    "UnsqueezeBackward0",
    "CloneBackward0",
    "ToCopyBackward0",
    "SelectBackward0",
    "SliceBackward0",
)


class LossWatch:
    """One ``LossInput`` per loss function found in the graphs looked at."""

    def __init__(self) -> None:
        self._seen: dict[str, LossInput] = {}
        self._passes = 0

    def before_backward(self, loss: Any) -> None:
        self._passes += 1
        if self._passes > _LOOK_FIRST and self._passes % _LOOK_EVERY:
            return
        root = getattr(loss, "grad_fn", None)
        for node in _loss_nodes(root):
            self._read(node)

    def inputs(self) -> list[LossInput]:
        return [entry.model_copy(deep=True) for entry in self._seen.values()]

    def _entry(self, function: str) -> LossInput:
        entry = self._seen.get(function)
        if entry is None:
            entry = self._seen[function] = LossInput(function=function)
        entry.calls += 1
        return entry

    def _read(self, node: Any) -> None:
        kind = type(node).__name__
        if kind in _CLASS:
            self._class_loss(node)
        elif kind == _SOFT:
            self._soft_targets(node)
        elif kind in _REGRESSION:
            self._regression_loss(_REGRESSION[kind], node)
        elif kind in _HAND:
            self._hand_written(_HAND[kind], node)
        elif kind in _LOGITS:
            entry = self._entry(_LOGITS[kind])
            entry.input_shape = _shape(node, "_saved_self")
            entry.target_shape = _shape(node, "_saved_target")
            entry.producer = entry.producer or _producer(_input(node))

    def _class_loss(self, node: Any) -> None:
        source = _input(node)
        log_softmax = _skip_views(source)
        via_log_softmax = type(log_softmax).__name__ == "LogSoftmaxBackward0"
        entry = self._entry("cross_entropy" if via_log_softmax else "nll_loss")
        shape = _shape(log_softmax, "_saved_result") if via_log_softmax else []
        shape = shape or _shape(node, "_saved_self")
        entry.input_shape = shape
        entry.target_shape = _shape(node, "_saved_target")
        if shape:
            entry.classes = shape[1] if len(shape) >= 2 else shape[0]
        made_by = _producer(_input(log_softmax) if via_log_softmax else source)
        entry.producer = entry.producer or made_by
        entry.probabilities = entry.probabilities or made_by is not None
        if via_log_softmax and _classes_from_features(log_softmax, shape):
            entry.misplaced_classes = True

    def _soft_targets(self, log_softmax: Any) -> None:
        """A log_softmax the loss is made of directly: cross_entropy given probabilities as
        targets (or a hand-written one), which builds no nll node."""
        shape = _shape(log_softmax, "_saved_result")
        if len(shape) < 2 or getattr(log_softmax, "_saved_dim", None) not in (1, 1 - len(shape)):
            return
        entry = self._entry("cross_entropy")
        entry.input_shape = shape
        entry.target_shape = shape  # probabilities as targets have the input's shape
        entry.classes = shape[1]
        made_by = _producer(_input(log_softmax))
        entry.producer = entry.producer or made_by
        entry.probabilities = entry.probabilities or made_by is not None
        if _classes_from_features(log_softmax, shape):
            entry.misplaced_classes = True

    def _hand_written(self, function: str, node: Any) -> None:
        """``(pred - y) ** 2`` written out: the difference's shape against the prediction's
        (the side that requires grad; the target does not) says whether the target was
        broadcast against it, as ``(N, 1) - (N,)`` makes an ``(N, N)`` matrix."""
        found = _difference(node)
        if found is None:
            return
        output, prediction = found
        entry = self._entry(function)
        entry.input_shape = prediction
        if output != prediction and math.prod(output) > math.prod(prediction):
            entry.broadcast = True
            entry.broadcast_shape = output

    def _regression_loss(self, function: str, node: Any) -> None:
        entry = self._entry(function)
        source = _input(node)
        expanded = _shape(node, "_saved_self")
        entry.target_shape = _shape(node, "_saved_target")
        entry.output_activation = entry.output_activation or _bounded(source)
        low, high = _extremes(node, "_saved_target")
        if low is not None and high is not None:
            entry.target_min = low if entry.target_min is None else min(entry.target_min, low)
            entry.target_max = high if entry.target_max is None else max(entry.target_max, high)
        if type(source).__name__ == "ExpandBackward0":
            sizes = getattr(source, "_saved_self_sym_sizes", None)
            original = [int(s) for s in sizes] if sizes is not None else expanded
            if original != expanded:
                entry.broadcast = True
                entry.input_shape = original
                entry.broadcast_shape = expanded
                return
        entry.input_shape = expanded


def _is_hand_loss(node: Any) -> bool:
    """A pow of 2 or an abs of a subtraction whose one side (the target) needs no grad."""
    kind = type(node).__name__
    if kind not in _HAND or (kind == "PowBackward0" and getattr(node, "_saved_exponent", 2) != 2):
        return False
    return _difference(node) is not None


def _difference(node: Any) -> tuple[list[int], list[int]] | None:
    """(the difference's shape, the prediction's shape) under a hand-written loss node."""
    sub = _input(node)
    if type(sub).__name__ != "SubBackward0":
        return None
    sides = [pair for pair in getattr(sub, "next_functions", ()) if pair[0] is not None]
    if len(sides) != 1:  # both sides require grad, or neither: not a prediction and a target
        return None
    made_by, index = sides[0]
    try:
        output = list(sub._input_metadata[0].shape)
        prediction = list(made_by._input_metadata[index].shape)
    except (AttributeError, IndexError, RuntimeError):  # a torch without the metadata
        return None
    return output, prediction


def _skip_views(node: Any) -> Any:
    for _ in range(4):
        if node is None or type(node).__name__ not in _VIEWS:
            return node
        node = _input(node)
    return node


def _classes_from_features(log_softmax: Any, shape: list[int]) -> bool:
    """log_softmax over dim 1 of an (N, T, C) input whose last dim a linear layer made:
    the time (or sequence) axis is taken as the classes."""
    if len(shape) < 3 or getattr(log_softmax, "_saved_dim", None) != 1:
        return False
    node = _input(log_softmax)
    for _ in range(8):
        kind = type(node).__name__ if node is not None else ""
        if kind in _LINEAR:
            return True
        if kind not in _PLAIN_VIEWS and kind not in _ELEMENTWISE:
            return False
        node = _input(node)
    return False


def _loss_nodes(root: Any) -> list[Any]:
    """Loss nodes near the top of the graph: under sums, means and scalings of losses."""
    found, stack, seen = [], [root], 0
    while stack and seen < _WALK:
        node = stack.pop()
        if node is None:
            continue
        seen += 1
        kind = type(node).__name__
        if kind in _CLASS or kind in _REGRESSION or kind in _LOGITS or kind == _SOFT:
            found.append(node)
            continue
        if kind in _HAND and _is_hand_loss(node):
            found.append(node)
            continue
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    return found


def _input(node: Any) -> Any:
    """The node that made the loss node's first input."""
    nexts = getattr(node, "next_functions", ())
    return nexts[0][0] if nexts else None


def _producer(node: Any) -> str | None:
    """softmax/sigmoid when one made the input, looking through views and copies."""
    for _ in range(4):
        if node is None:
            return None
        kind = type(node).__name__
        if kind in _PRODUCERS:
            return _PRODUCERS[kind]
        if kind not in _VIEWS:
            return None
        node = _input(node)
    return None


def _bounded(node: Any) -> str | None:
    """sigmoid/tanh when one made a regression loss's input, looking through views."""
    for _ in range(4):
        if node is None:
            return None
        kind = type(node).__name__
        if kind in _BOUNDED:
            return _BOUNDED[kind]
        if kind not in _VIEWS:
            return None
        node = _input(node)
    return None


def _extremes(node: Any, name: str) -> tuple[float | None, float | None]:
    """The smallest and largest finite value of a saved floating tensor (one host read, on
    the sampled looks only)."""
    try:
        value = getattr(node, name)
    except RuntimeError:
        return None, None
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or not value.numel():
        return None, None
    with torch.no_grad():
        finite = value.detach()[torch.isfinite(value.detach())]
        if not finite.numel():
            return None, None
        low, high = torch.aminmax(finite.float())
    return float(low), float(high)


def _shape(node: Any, name: str) -> list[int]:
    try:
        value = getattr(node, name)
    except RuntimeError:  # freed by an earlier backward(retain_graph=False)
        return []
    return list(value.shape) if isinstance(value, torch.Tensor) else []
