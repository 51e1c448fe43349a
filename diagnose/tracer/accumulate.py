"""A forward producer re-run on its own inputs: does it reproduce, and what does it accumulate.

The lineage names the op that made a non-finite value from finite inputs. Two more re-runs of
that op, at the event only, say why:

* in its own dtypes (the autocast regions of its call): the value recurs, which confirms the
  op made it from those inputs (``CrossCheck``);
* in float64: a reducing op (matmul, linear, conv, bmm, einsum, baddbmm, attention) sums K
  products, so inputs far from the dtype's limit (max |x| 192 and 205 in float16) still
  accumulate past it (192 * 205 * 64 = 2.5e6 > 65504). The float64 result is what the op
  computes, exactly enough; it, not the inputs' headroom, decides whether the compute dtype
  overflowed (``Accumulation``). For attention, the scores ``q @ k^T`` are what overflow, and a
  softmax later in the call marks the product as attention scores; a division or
  multiplication between them marks a scale applied only after the product.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_map

from diagnose.formatting import num
from diagnose.report import Accumulation, CrossCheck
from diagnose.tracer.ops import OpRecord
from diagnose.tracer.stats import dtype_max, dtype_name

METHOD = "float64 replay of the op"
# op -> where its two reduced operands are among the tensor arguments (a, b), and a bias's
_PRODUCTS = {
    "matmul": (0, 1, None),
    "mm": (0, 1, None),
    "bmm": (0, 1, None),
    "mv": (0, 1, None),
    "dot": (0, 1, None),
    "inner": (0, 1, None),
    "linear": (0, 1, 2),
    "baddbmm": (1, 2, 0),
    "addmm": (1, 2, 0),
    "addbmm": (1, 2, 0),
    "addmv": (1, 2, 0),
}
_CONVS = ("conv1d", "conv2d", "conv3d")
REDUCING = (*_PRODUCTS, *_CONVS, "einsum", "tensordot", "scaled_dot_product_attention")
_SOFTMAX = ("softmax", "log_softmax", "_softmax")
_SCALES = ("div", "mul", "div_", "mul_", "true_divide")
# ops a score tensor goes through on its way to the softmax (masking, a bias, a scale)
_PASSING = (*_SCALES, "masked_fill", "masked_fill_", "add", "add_", "sub", "where", "float", "to")
_LINEAGE_OPS = 8


Context = Callable[[], contextlib.AbstractContextManager[Any]]


def cross_check(rec: OpRecord, own_dtypes: Context) -> CrossCheck:
    """Re-run ``rec`` in its own dtypes (``own_dtypes``: its call's autocast regions) and in
    float64: whether the value recurs, and how."""
    again = _run(rec, own_dtypes)
    recurs = again is not None and not _finite(again)
    wide = _run(rec, None, torch.float64)
    if not recurs:
        detail = (
            f"re-run alone on its recorded inputs, `{rec.name}` returned finite values: the "
            "non-finite value did not come from those inputs as they are now"
        )
        return CrossCheck(method=METHOD, agreed=False, detail=detail)
    dtype = dtype_name(rec.output.dtype)
    if wide is None:
        detail = f"`{rec.name}` makes it again in {dtype}; it could not be re-run in float64"
    elif not _finite(wide):
        detail = (
            f"`{rec.name}` makes it again in {dtype} and in float64 too: the op itself makes "
            "it from these inputs, not the dtype's range"
        )
    else:
        detail = (
            f"`{rec.name}` makes it again in {dtype}; in float64 its largest |result| is "
            f"{_big(wide)}, past {dtype}'s range: the dtype overflowed"
        )
        limit = dtype_max(rec.output.dtype)
        if limit is not None and _abs_max(wide) <= limit:
            detail = (
                f"`{rec.name}` makes it again in {dtype}; in float64 its result stays within "
                f"{dtype}'s range (largest |result| {_big(wide)}): a partial sum overflowed"
            )
    return CrossCheck(method=METHOD, agreed=True, detail=detail)


def accumulation(rec: OpRecord, later: list[OpRecord]) -> Accumulation | None:
    """What a reducing op computed, recomputed in float64; None for another op."""
    name = rec.name
    if name not in REDUCING or not rec.output.is_floating_point():
        return None
    limit = dtype_max(rec.output.dtype)
    if limit is None:
        return None
    tensors = [t for _, t in rec.inputs]
    terms, bound = _bound(name, rec.args, tensors)
    if name == "scaled_dot_product_attention":
        wide = _scores(rec)  # the softmax bounds its result: the scores are what overflow
        attention, scaled = True, False
    else:
        wide = _run(rec, None, torch.float64)
        attention, scaled = _toward_softmax(rec, later)
    largest = _abs_max(wide) if wide is not None and _finite(wide) else None
    return Accumulation(
        op=name,
        compute_dtype=dtype_name(rec.output.dtype),
        dtype_max=limit,
        terms=terms,
        bound=bound,
        max_abs=largest,
        attention=attention,
        scaled_after=scaled,
    )


def _bound(name: str, args: tuple, tensors: list[torch.Tensor]) -> tuple[int | None, float | None]:
    """K and max|a| * max|b| * K (plus the bias's largest |x|) where the operands are known."""
    tensor_args = [a for a in args if isinstance(a, torch.Tensor)]
    a = b = bias = None
    if name in _PRODUCTS:
        ia, ib, ibias = _PRODUCTS[name]
        a = tensor_args[ia] if len(tensor_args) > ia else None
        b = tensor_args[ib] if len(tensor_args) > ib else None
        bias = tensor_args[ibias] if ibias is not None and len(tensor_args) > ibias else None
        terms = a.shape[-1] if a is not None and a.dim() else None
    elif name in _CONVS and len(tensor_args) >= 2:
        a, b = tensor_args[0], tensor_args[1]
        bias = tensor_args[2] if len(tensor_args) > 2 else None
        terms = b[0].numel() if b.dim() else None  # in_channels / groups * kernel size
    elif name == "scaled_dot_product_attention" and len(tensor_args) >= 2:
        a, b = tensor_args[0], tensor_args[1]
        terms = a.shape[-1] if a.dim() else None
    else:
        return None, None
    if a is None or b is None or terms is None or not terms:
        return terms, None
    bound = _abs_max(a) * _abs_max(b) * terms
    if name == "scaled_dot_product_attention":
        bound *= 1 / math.sqrt(terms)  # its default scale
    if bias is not None:
        bound += _abs_max(bias)
    return terms, bound if math.isfinite(bound) else None


def _scores(rec: OpRecord) -> torch.Tensor | None:
    """``q @ k^T * scale`` of an attention call, in float64."""
    q, k = (*rec.args, None, None)[:2]
    if not isinstance(q, torch.Tensor) or not isinstance(k, torch.Tensor) or not q.dim():
        return None
    scale = (rec.kwargs or {}).get("scale") or 1 / math.sqrt(q.shape[-1])
    with torch.no_grad():
        return (q.detach().double() @ k.detach().double().transpose(-2, -1)) * scale


def _toward_softmax(rec: OpRecord, later: list[OpRecord]) -> tuple[bool, bool]:
    """Whether the op's result reaches a softmax through a few masking or scaling ops (the
    attention scores), and whether one of those scaled it."""
    lineage = {id(rec.output)}
    scaled = False
    start = next((i for i, r in enumerate(later) if r is rec), -1) + 1
    for r in later[start : start + 4 * _LINEAGE_OPS]:
        if not any(id(t) in lineage for _, t in r.inputs):
            continue
        if r.name in _SOFTMAX:
            return True, scaled
        if r.name not in _PASSING or len(lineage) > _LINEAGE_OPS:
            return False, False
        if r.name in _SCALES:
            scaled = True
        lineage.add(id(r.output))
    return False, False


def _run(rec: OpRecord, within: Context | None, dtype: torch.dtype | None = None) -> Any:
    """``rec`` re-run on its inputs, ``within`` a context (its autocast regions), or cast to
    ``dtype`` outside autocast; its first floating-point tensor result, None if it failed."""

    def cast(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            x = x.detach()
            return x.to(dtype) if dtype is not None and x.is_floating_point() else x
        return x

    if rec.func is None:
        return None
    try:
        args = tree_map(cast, tuple(rec.args))
        kwargs = tree_map(cast, dict(rec.kwargs or {}))
        if dtype is not None and "dtype" in kwargs:
            kwargs["dtype"] = dtype
        device = rec.output.device.type
        region = within() if within is not None else torch.autocast(device, enabled=False)
        with torch.no_grad(), region:
            out = rec.func(*args, **kwargs)
    except Exception:
        return None
    out = out[0] if isinstance(out, (tuple, list)) and out else out
    return out if isinstance(out, torch.Tensor) and out.is_floating_point() else None


def _finite(t: torch.Tensor) -> bool:
    return t.numel() == 0 or bool(torch.isfinite(t).all())


def _abs_max(t: torch.Tensor) -> float:
    if t.numel() == 0:
        return 0.0
    with torch.no_grad():
        x = t.detach()
        finite = x[torch.isfinite(x)] if not _finite(x) else x
        return float(finite.abs().max().double()) if finite.numel() else math.inf


def _big(t: torch.Tensor) -> str:
    return num(_abs_max(t))
