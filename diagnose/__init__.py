"""diagnose: find where a PyTorch training run's first inf/nan was born, why, and how to fix it.

The public API is imported lazily so that ``import diagnose`` (and ``diagnose match``) does
not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Matcher",
    "NonFiniteDetected",
    "Report",
    "Tracer",
    "diagnose_script",
    "load_records",
]

_LAZY = {
    "load_records": "diagnose.records",
    "LoadResult": "diagnose.records",
    "Matcher": "diagnose.matcher",
    "Match": "diagnose.matcher",
    "Tracer": "diagnose.tracer",
    "NonFiniteDetected": "diagnose.tracer",
    "diagnose_script": "diagnose.runner",
    "Report": "diagnose.report",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'diagnose' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
