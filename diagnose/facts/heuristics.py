"""The numbers the facts are computed with: dtype limits (exact) and heuristics (data).

dtype limits are properties of the number formats and live here as constants. Everything that
is a rule of thumb (a "usual" learning rate, a threshold) lives in ``rules/_heuristics.yaml`` so
that it is visible, labelled and editable without touching code.
"""

from __future__ import annotations

import functools
import math
import re
import struct
from typing import Any

import yaml

from diagnose.paths import rules_dir

# Largest finite value of each floating dtype (torch.finfo(dtype).max).
DTYPE_MAX: dict[str, float] = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
    "float8_e4m3fn": 448.0,
    "float8_e5m2": 57344.0,
}

# Smallest positive value of each floating dtype (its smallest subnormal, 2**-24 in float16):
# a positive number at or below half of it rounds to 0 there.
DTYPE_SMALLEST: dict[str, float] = {
    "float16": 2.0**-24,
    "bfloat16": 2.0**-133,
    "float32": 2.0**-149,
    "float64": 5e-324,
    "float8_e4m3fn": 2.0**-9,
    "float8_e5m2": 2.0**-16,
}


def rounds_to_zero(x: float, dtype: str) -> bool:
    """Whether a positive number becomes exactly 0 once stored in ``dtype`` (round to
    nearest, ties to even: half the smallest subnormal goes to 0)."""
    smallest = DTYPE_SMALLEST.get(dtype)
    return smallest is not None and 0.0 < x <= smallest / 2


# Short names shown to users.
DTYPE_SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}

_DTYPE_ALIASES = {
    "half": "float16",
    "fp16": "float16",
    "f16": "float16",
    "float16": "float16",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "float": "float32",
    "fp32": "float32",
    "f32": "float32",
    "float32": "float32",
    "double": "float64",
    "fp64": "float64",
    "float64": "float64",
}

# The dtype a precision setting computes activations in (None: not one dtype).
PRECISION_DTYPE = {
    "fp16": "float16",
    "fp16-autocast": "float16",
    "bf16": "bfloat16",
    "bf16-autocast": "bfloat16",
    "fp32": "float32",
}


def normalize_dtype(name: Any) -> str | None:
    """'torch.float16', 'half', 'fp16' -> 'float16'; None for what is not a known float dtype."""
    if not isinstance(name, str) or not name:
        return None
    key = name.strip().lower().removeprefix("torch.")
    return _DTYPE_ALIASES.get(key, key if key in DTYPE_MAX else None)


def round_to_fp16(x: float) -> float:
    """The value x takes once stored in float16 (round to nearest; overflow gives inf)."""
    try:
        return struct.unpack("e", struct.pack("e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_OP_PREFIXES = ("aten::", "torch.", "torch.nn.functional.", "f.", "tensor.", "_c._nn.")


def normalize_op(op: Any) -> str | None:
    """'aten::log.Tensor', 'LogBackward0', '__truediv__', 'log_' -> 'log', 'truediv', ..."""
    if not isinstance(op, str) or not op.strip():
        return None
    name = op.strip()
    if is_backward_op(name):  # autograd names: LinalgVectorNormBackward0 -> linalg_vector_norm
        name = re.sub(r"Backward\d*$", "", name)
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    name = name.lower()
    for prefix in _OP_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix) :]
    name = name.rsplit(".", 1)[0] if "." in name and not name.startswith(".") else name
    name = name.rsplit(".", 1)[-1]
    return name.strip("_") or None


def is_backward_op(op: Any) -> bool:
    return isinstance(op, str) and re.search(r"Backward\d*$", op.strip()) is not None


@functools.lru_cache(maxsize=1)
def heuristics() -> dict[str, Any]:
    """The parsed ``rules/_heuristics.yaml`` (cached)."""
    with open(rules_dir() / "_heuristics.yaml", encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return data if isinstance(data, dict) else {}


def threshold(name: str, default: float) -> float:
    value = heuristics().get("thresholds", {}).get(name, default)
    return float(value) if isinstance(value, int | float) else default


def op_family(op_base: str | None) -> str | None:
    if not op_base:
        return None
    for family, names in heuristics().get("op_families", {}).items():
        if op_base in (names or []):
            return str(family)
    return None


def typical_lr(optimizer_key: str | None) -> tuple[float | None, str | None]:
    entry = heuristics().get("typical_lr", {}).get(optimizer_key or "")
    if isinstance(entry, dict) and isinstance(entry.get("lr"), int | float):
        return float(entry["lr"]), str(entry.get("source", "heuristic"))
    return None, None
