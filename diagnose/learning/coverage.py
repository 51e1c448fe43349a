"""Which parameters can learn: gradients against what the optimizers hold, and weight motion.

Checked at the optimizer steps of the first few passes, while the gradients of the step are
there: a parameter that gets a gradient but sits in no param group never changes; a module
called in forward that the model does not register is outside ``model.parameters()``, so an
optimizer built from it misses it; a parameter an optimizer holds whose gradient is always
missing is cut off from the loss. Weight motion is a sample of the optimized weights (a few
tensors, a few thousand elements each) compared with the first step's copy.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch import nn

from diagnose.learning.modules import (
    ModuleWatch,
    container_of,
    name_in,
    qualified,
    root_label,
    trainable,
)
from diagnose.report import ModuleNote

_SAMPLE_TENSORS = 8
_SAMPLE_ELEMENTS = 4096
_LIMIT = 20  # modules named per finding


def held_ids(optimizers: list[Any]) -> set[int]:
    return {
        id(p)
        for optimizer in optimizers
        for group in optimizer.param_groups
        for p in group["params"]
        if isinstance(p, torch.Tensor)
    }


class Coverage:
    """The checks of parameters against optimizers, accumulated over the checked steps."""

    def __init__(self) -> None:
        self.checks = 0
        self.elements = 0
        self.not_in_optimizer: dict[str, ModuleNote] = {}
        self.unregistered: dict[str, ModuleNote] = {}
        self.no_grad: dict[str, ModuleNote] = {}
        self._missing: dict[int, int] = {}  # module id -> checks its gradients were all missing
        self._modules: dict[int, tuple[weakref.ref, weakref.ref]] = {}

    def check(self, optimizers: list[Any], modules: ModuleWatch) -> None:
        held = held_ids(optimizers)
        if not held:
            return
        self.checks += 1
        self.elements = sum(
            p.numel()
            for o in optimizers
            for g in o.param_groups
            for p in g["params"]
            if isinstance(p, torch.Tensor) and p.requires_grad
        )
        for root in list(modules.roots):
            self._left_out(root, held)
        self._outsiders(modules, held)
        self._without_gradient(modules, held)
        self._under_no_grad(modules, held)

    def no_gradient(self) -> list[ModuleNote]:
        """Modules held by an optimizer whose gradients were missing on every check."""
        notes = []
        for key, (root_ref, module_ref) in self._modules.items():
            root, module = root_ref(), module_ref()
            if root is None or module is None or self._missing.get(key, 0) < self.checks:
                continue
            notes.append(_note(root, module))
        return notes[:_LIMIT]

    def _left_out(self, root: nn.Module, held: set[int]) -> None:
        for module in root.modules():
            params = [p for p in trainable(module) if p.grad is not None and id(p) not in held]
            if params:
                note = _note(root, module, params)
                self.not_in_optimizer.setdefault(note.name, note)

    def _outsiders(self, modules: ModuleWatch, held: set[int]) -> None:
        for root_ref, module_ref in modules.outsiders.values():
            root, module = root_ref(), module_ref()
            if root is None or module is None:
                continue
            params = [p for p in trainable(module) if id(p) not in held]
            if params and not _registered_elsewhere(module, modules):
                note = _note(root, module, params)
                kept = container_of(root, module)
                if kept is not None:
                    note.name, note.container = kept
                self.unregistered.setdefault(note.name, note)

    def _without_gradient(self, modules: ModuleWatch, held: set[int]) -> None:
        for key, (root_ref, module_ref) in modules.called.items():
            module = module_ref()
            if module is None:
                continue
            params = [p for p in trainable(module) if id(p) in held]
            if not params:
                continue
            self._modules.setdefault(key, (root_ref, module_ref))
            if all(p.grad is None for p in params):
                self._missing[key] = self._missing.get(key, 0) + 1

    def _under_no_grad(self, modules: ModuleWatch, held: set[int]) -> None:
        for root_ref, module_ref in modules.no_grad.values():
            root, module = root_ref(), module_ref()
            if root is None or module is None:
                continue
            if any(id(p) in held for p in trainable(module)):
                note = _note(root, module)
                self.no_grad.setdefault(note.name, note)


class WeightMotion:
    """How far a sample of the trained weights moved from where the first step found them."""

    def __init__(self) -> None:
        self._tensors: list[weakref.ref] = []
        self._start: list[torch.Tensor] = []
        self.change: float | None = None

    @property
    def started(self) -> bool:
        return bool(self._start)

    def start(self, params: list[torch.Tensor]) -> None:
        chosen = sorted(
            (p for p in params if p.is_floating_point() and p.numel() > 0),
            key=lambda p: -p.numel(),
        )[:_SAMPLE_TENSORS]
        with torch.no_grad():
            for p in chosen:
                self._tensors.append(weakref.ref(p))
                self._start.append(_slice(p).clone())

    def measure(self) -> None:
        moved, size = [], []
        with torch.no_grad():
            for ref, first in zip(self._tensors, self._start, strict=True):
                p = ref()
                if p is None:
                    continue
                now = _slice(p)
                moved.append((now - first).float().norm())
                size.append(first.float().norm())
            if not moved:
                return
            total_moved, total_size = torch.stack(
                [torch.stack(moved).norm(), torch.stack(size).norm()]
            ).tolist()
        self.change = total_moved / total_size if total_size > 0 else None


def _slice(p: torch.Tensor) -> torch.Tensor:
    return p.detach().reshape(-1)[:_SAMPLE_ELEMENTS]


def _note(root: nn.Module, module: nn.Module, params: list[Any] | None = None) -> ModuleNote:
    params = trainable(module) if params is None else params
    name = name_in(root, module)
    if module is not root and not any(m is module for m in root.modules()):
        name = f"{type(module).__name__} called by {root_label(root)}"
    elif module is root:
        name = root_label(root)
    else:
        name = qualified(root, name)
    return ModuleNote(
        name=name, type=type(module).__name__, parameters=sum(p.numel() for p in params)
    )


def _registered_elsewhere(module: nn.Module, modules: ModuleWatch) -> bool:
    """A module that another root owns (a shared encoder) is registered, just not here."""
    return any(any(m is module for m in root.modules()) for root in list(modules.roots))
