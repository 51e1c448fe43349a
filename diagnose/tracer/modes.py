"""The script's own torch function and dispatch modes, kept apart from diagnose's own work.

A script may count or rewrite ops with a ``TorchDispatchMode`` or a ``TorchFunctionMode``
(a FLOP counter, a debugging mode of its own). The tracer's reductions (one ``aminmax`` per
output, the gradient norms, the step's read) are not the script's ops, so while they run the
script's modes are taken off their stacks and put back after (``hidden``), and the tracer's
own loss watch, itself a function mode, is taken off the stack wherever it is
(``remove``), so a mode the script entered after it stays the one the script will exit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

_len_function = torch._C._len_torch_function_stack
_len_dispatch = torch._C._len_torch_dispatch_stack
_pop_function = torch._C._pop_torch_function_stack
_push_function = torch._C._push_on_torch_function_stack


def present(own: int = 0) -> bool:
    """Whether modes other than ``own`` function modes of diagnose's are on (cheap)."""
    return _len_function() > own or _len_dispatch() > 0


@contextlib.contextmanager
def hidden() -> Iterator[None]:
    """Every function and dispatch mode off meanwhile, each put back in its place after."""
    functions = [_pop_function() for _ in range(_len_function())]
    try:
        with _disable_current_modes():
            yield
    finally:
        for mode in reversed(functions):
            _push_function(mode)


def remove(mode: Any) -> None:
    """Take ``mode`` off the function mode stack, the modes entered after it kept in order."""
    above = []
    try:
        while _len_function():
            top = _pop_function()
            if top is mode:
                break
            above.append(top)
    finally:
        for kept in reversed(above):
            _push_function(kept)
