"""Each tensor an op was given is named by the parameter it was passed as, from the op's own
signature or ATen schema."""

from __future__ import annotations

import torch
from torch.nn import functional as F

from diagnose.tracer.operands import operand_names
from diagnose.tracer.stats import iter_tensors


def _names(func, op, *args, **kwargs):
    paths = [path for path, _ in iter_tensors((args, kwargs), "x")]
    return operand_names(func, op, paths, len(args))


def test_a_builtin_is_named_from_its_aten_schema():
    x, w, b = torch.ones(2, 3), torch.ones(4, 3), torch.ones(4)
    assert _names(F.linear, "linear", x, w, b) == ["input", "weight", "bias"]
    assert _names(torch.Tensor.log, "log", x) == ["input"]
    assert _names(torch.div, "div", x, x) == ["input", "other"]
    assert _names(torch.Tensor.__mul__, "__mul__", x, x) == ["input", "other"]


def test_a_python_function_is_named_from_its_signature_and_keywords_by_their_own_name():
    x, y = torch.ones(3), torch.ones(3)
    assert _names(F.mse_loss, "mse_loss", x, y) == ["input", "target"]
    assert _names(F.mse_loss, "mse_loss", x, target=y) == ["input", "target"]
    assert _names(F.cross_entropy, "cross_entropy", x, y, weight=y) == [
        "input",
        "target",
        "weight",
    ]


def test_a_tensor_inside_a_list_argument_keeps_its_place():
    x = torch.ones(2)
    assert _names(torch.cat, "cat", [x, x]) == ["tensors[0]", "tensors[1]"]


def test_an_op_that_cannot_be_told_names_nothing():
    x = torch.ones(2)
    assert _names(None, "my_custom_op", x) == [None]
    assert _names(torch.Tensor.__rtruediv__, "__rtruediv__", x, 2.0) == [None]
