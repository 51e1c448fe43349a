"""The one way numbers are written in prose: tracer messages, symptoms, logs and renderers.

Everything a user reads says a number the same way, so the text report, the TUI and an
event's message never disagree about a value (``-inf`` stays ``-inf``, ``0`` stays ``0``).
Code literals written into a patch are not prose: ``diagnose.patches.source`` owns those.
"""

from __future__ import annotations

import math

__all__ = ["num"]


def num(x: float | None, digits: int = 2) -> str:
    """Compact scientific-ish format: 6.3e+04 -> 6.3e4, inf, -inf, nan, '-' for unknown."""
    if x is None:
        return "-"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e4:
        return f"{float(f'{x:.{digits + 1}g}'):g}"
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa}e{int(exponent)}"
