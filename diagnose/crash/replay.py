"""Re-running what failed, to see what the first run did not keep.

``module_calls``: the root model's forward again, with every module call recorded (name, type,
input and output shapes) up to the one that raises; without gradients, and with the model's
buffers (BatchNorm's running statistics) and the RNG put back as they were, so the run's
state is what the script left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_CALLS = 4096  # module calls recorded in one replay


@dataclass
class Call:
    """One completed module call of a replay."""

    name: str
    module: Any
    ins: list[list[int]]
    out: list[int] | None


def _shapes(value: Any) -> list[list[int]]:
    import torch

    if isinstance(value, torch.Tensor):
        return [list(value.shape)]
    if isinstance(value, list | tuple):
        found: list[list[int]] = []
        for item in value:
            found += _shapes(item)
        return found
    return []


@contextlib.contextmanager
def preserved(model: Any) -> Iterator[None]:
    """The model's buffers and the global RNG as they were, whatever the block did."""
    import torch

    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    rng = torch.get_rng_state()
    try:
        yield
    finally:
        with torch.no_grad():
            for buf, saved in buffers:
                buf.copy_(saved)
        torch.set_rng_state(rng)


def module_calls(root: Any, args: tuple, kwargs: dict) -> list[Call]:
    """The module calls that completed when ``root(*args, **kwargs)`` ran again."""
    import torch
    from torch.nn.modules.module import register_module_forward_hook

    names = {id(m): n for n, m in root.named_modules()}
    calls: list[Call] = []

    def record(module: Any, inputs: Any, output: Any) -> None:
        if id(module) in names and len(calls) < MAX_CALLS:
            outs = _shapes(output)
            calls.append(
                Call(
                    names[id(module)] or type(module).__name__,
                    module,
                    _shapes(inputs),
                    outs[0] if outs else None,
                )
            )

    handle = register_module_forward_hook(record)
    try:
        with preserved(root), torch.no_grad(), contextlib.suppress(Exception):
            root(*args, **kwargs)
    finally:
        handle.remove()
    return calls
