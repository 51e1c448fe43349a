"""The patcher registry: fix id -> the function that writes that fix into a script.

    @patcher("lower-learning-rate")
    def lower_learning_rate(ctx: PatchContext) -> Patched: ...

Each patch kind's module registers its own patchers where they are defined; a fix in
``rules/_fixes.yaml`` without one declares ``no_patch: <why>`` there instead.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnose.patches.context import PatchContext, Patched

Patcher = Callable[[PatchContext], Patched]

PATCHERS: dict[str, Patcher] = {}


def patcher(
    fix_id: str, registry: dict[str, Patcher] | None = None
) -> Callable[[Patcher], Patcher]:
    """Register the decorated function as the patcher of ``fix_id`` (once per fix id)."""

    def register(func: Patcher) -> Patcher:
        target = PATCHERS if registry is None else registry
        if fix_id in target:
            raise ValueError(f"fix {fix_id!r} has two patchers")
        target[fix_id] = func
        return func

    return register
