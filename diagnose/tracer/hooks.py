"""Installing the tracer's hooks and patches, and taking every one of them out again.

Everything is put in place on one ``contextlib.ExitStack``, so leaving it undoes exactly what
was done, in reverse order, even when installing failed half-way: torch's global optimizer
step hooks, the wrappers of ``Tensor.backward``, ``torch.autograd.backward``, ``GradScaler``'s
``scale``/``step``/``update`` and ``Optimizer.__init__``, the data loader's index watch, the
filter of torch's compile-hook warning, and what is entered beside the tracer (its config
capture), last in and first out. The global module hooks come and go with detailed steps
(``ModuleHooks``); a light step watches the root calls through ``roots`` instead.

The wrappers only forward to the ``Sink`` (the Tracer): what a call means is decided there.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch.nn.modules import module as _module_hooks
from torch.optim import optimizer as _optim_hooks

from diagnose.tracer import modes
from diagnose.tracer.data import BatchIndices


class Sink(Protocol):
    """What the wrappers tell the tracer."""

    def on_pre(self, module: torch.nn.Module, args: Any) -> None: ...
    def on_forward(self, module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None: ...
    def on_step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> Any: ...
    def on_step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None: ...
    def before_backward(self, tensors: Any) -> None: ...
    def after_backward(self) -> None: ...
    def watching_ops(self) -> bool: ...
    def scaled(self, scaler: Any, outputs: Any, result: Any) -> None: ...
    def before_scaler_step(self) -> None: ...
    def after_scaler_step(self, scaler: Any) -> None: ...
    def scale_updated(self, scaler: Any) -> None: ...
    def optimizer_created(self, optimizer: Any) -> None: ...


class ModuleHooks:
    """torch's global module forward hooks: every module call of a detailed step (or of a
    replay) goes to the sink while they are on."""

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._handles: list[Any] = []

    @property
    def on(self) -> bool:
        return bool(self._handles)

    def add(self) -> None:
        self._handles += [
            _module_hooks.register_module_forward_pre_hook(self._sink.on_pre),
            _module_hooks.register_module_forward_hook(
                self._sink.on_forward, with_kwargs=True, always_call=True
            ),
        ]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
            # torch leaves the with_kwargs flag of a removed global hook behind
            _module_hooks._global_forward_hooks_with_kwargs.pop(handle.id, None)
        self._handles.clear()


def install(
    stack: contextlib.ExitStack,
    sink: Sink,
    batch: BatchIndices,
    beside: list[contextlib.AbstractContextManager[Any]],
) -> None:
    """Put the tracer's process-wide hooks and patches in place, each undone by ``stack``;
    ``beside`` is entered last (its own patches may wrap a function patched here)."""
    for register in (
        _optim_hooks.register_optimizer_step_pre_hook(sink.on_step_pre),
        _optim_hooks.register_optimizer_step_post_hook(sink.on_step_post),
    ):
        stack.callback(register.remove)
    in_backward = threading.local()  # Tensor.backward calls autograd.backward: one call counts
    _patch(stack, torch.Tensor, "backward", lambda f: _wrap_backward(f, sink, in_backward))
    _patch(stack, torch.autograd, "backward", lambda f: _wrap_backward(f, sink, in_backward))
    _patch(stack, torch.amp.GradScaler, "scale", lambda f: _wrap_scaler_scale(f, sink))
    _patch(stack, torch.amp.GradScaler, "step", lambda f: _wrap_scaler_step(f, sink))
    _patch(stack, torch.amp.GradScaler, "update", lambda f: _wrap_scaler_update(f, sink))
    _patch(stack, torch.optim.Optimizer, "__init__", lambda f: _wrap_optimizer_init(f, sink))
    batch.install()
    stack.callback(batch.uninstall)
    stack.callback(_restore_warnings, _quiet_compile_hook_warning())
    for companion in beside:
        stack.enter_context(companion)


def _patch(stack: contextlib.ExitStack, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    stack.callback(setattr, owner, name, original)


def _wrap_backward(original: Any, sink: Sink, in_backward: threading.local) -> Any:
    """Wrap ``Tensor.backward`` or ``torch.autograd.backward`` (first argument: the
    tensor(s) to differentiate). Whether a call is the inner one of a ``Tensor.backward``
    is each thread's own: another thread's backward pass is not this one's."""

    def backward(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(in_backward, "on", False):
            return original(tensors, *args, **kwargs)
        _own_work(sink, sink.before_backward, tensors)
        in_backward.on = True
        try:
            result = original(tensors, *args, **kwargs)
        finally:
            in_backward.on = False
        _own_work(sink, sink.after_backward)
        return result

    backward.__wrapped__ = original  # type: ignore[attr-defined]
    return backward


def _own_work(sink: Sink, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``, the tracer's work, with the script's own torch modes off meanwhile
    (see ``modes``); the tracer's loss watch is its own."""
    if modes.present(sink.watching_ops()):
        with modes.hidden():
            return call(*args)
    return call(*args)


def _wrap_scaler_scale(original: Any, sink: Sink) -> Any:
    def scale(scaler: Any, outputs: Any) -> Any:
        if sink.watching_ops():  # the scaling is the tracer's business, not the loss's
            with torch.overrides._pop_mode_temporarily():
                result = original(scaler, outputs)
        else:
            result = original(scaler, outputs)
        sink.scaled(scaler, outputs, result)
        return result

    return scale


def _wrap_scaler_step(original: Any, sink: Sink) -> Any:
    def step(scaler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        sink.before_scaler_step()
        result = original(scaler, optimizer, *args, **kwargs)
        sink.after_scaler_step(scaler)
        return result

    return step


def _wrap_scaler_update(original: Any, sink: Sink) -> Any:
    def update(scaler: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(scaler, *args, **kwargs)
        sink.scale_updated(scaler)
        return result

    return update


def _wrap_optimizer_init(original: Any, sink: Sink) -> Any:
    def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
        original(optimizer, *args, **kwargs)
        sink.optimizer_created(optimizer)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


def _quiet_compile_hook_warning() -> Any:
    """Hide torch's warning that global module hooks fire once more around a ``torch.compile``
    wrapper: the hooks are the tracer's, which counts that call as the model's own, and the
    script did nothing to be warned about. Returns the filter, to take it out at detach."""
    warnings.filterwarnings(
        "ignore",
        message=r"Using `torch\.compile\(module\)` when there are "
        r"global hooks on modules",
        category=UserWarning,
    )
    return warnings.filters[0]


def _restore_warnings(entry: Any) -> None:
    with contextlib.suppress(ValueError):  # the script reset the filters itself
        warnings.filters.remove(entry)
        mutated = getattr(warnings, "_filters_mutated", None)
        if callable(mutated):
            mutated()  # the module caches filter decisions per call site
