"""The model as it runs: its root modules, what they call, their mode and their first input.

Global module hooks (torch's registry, nothing put on the user's modules) are installed for the
first few backward passes only; what they learn — which modules are roots, which modules a
root's forward calls without owning them, which ran with gradients disabled, how large the
first layer's input is — holds for the rest of a run whose code does not change.
"""

from __future__ import annotations

import math
import os
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

_SWITCHED = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)
_NORMS = (
    nn.modules.batchnorm._BatchNorm,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.modules.instancenorm._InstanceNorm,
)
_SCAN_LIMIT = 2_000  # attributes searched for an unregistered module's container


# what the script calls each root model, found where it was first called (a model is named by
# the user's code, not by a watch: one table for every watch of the process)
_LABELS: weakref.WeakKeyDictionary[nn.Module, str] = weakref.WeakKeyDictionary()
_SKIP = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in (torch, sys.modules[__name__.split(".")[0]])
    if getattr(m, "__file__", None)
)


def root_label(root: nn.Module) -> str:
    """The script's own name for a root model (``generator``, ``model``), else its class."""
    try:
        return _LABELS.get(root) or type(root).__name__
    except TypeError:  # not weakly referable or not hashable: its class will do
        return type(root).__name__


def qualified(root: nn.Module, name: str) -> str:
    """A module's name under its root as the script spells it: ``generator.0``."""
    label = root_label(root)
    return f"{label}.{name}" if name else label


def _learn_label(root: nn.Module) -> None:
    try:
        if root in _LABELS:
            return
        name = caller_name(root, depth=3)
        if name is not None:
            _LABELS[root] = name
    except TypeError:  # not weakly referable
        return


def caller_name(obj: Any, depth: int = 2) -> str | None:
    """The name the user's code calling into torch gives ``obj``: a local, an attribute of the
    calling object (``self.generator``), a global; read from the first frame outside torch and
    diagnose, ``depth`` frames up from here."""
    try:
        frame = sys._getframe(depth)
        for _ in range(30):
            if frame is None or not frame.f_code.co_filename.startswith(_SKIP):
                break
            frame = frame.f_back
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        spaces = [
            frame.f_locals,
            getattr(owner, "_modules", None),
            getattr(owner, "__dict__", None),
        ]
        for space in [*spaces, frame.f_globals]:
            if not isinstance(space, dict):
                continue
            name = next((k for k, v in list(space.items())[:500] if v is obj and k != "self"), None)
            if isinstance(name, str) and name.isidentifier():
                return name
    except (ValueError, RuntimeError):  # odd objects in the caller's namespace
        return None
    return None


def trainable(module: nn.Module) -> list[nn.Parameter]:
    """The module's own parameters that require gradients (not its children's)."""
    return [p for p in module._parameters.values() if p is not None and p.requires_grad]


@dataclass
class InputScale:
    module: str
    mean: float
    std: float
    low: float
    high: float

    @property
    def spread(self) -> float:
        return max(abs(self.mean), self.std, abs(self.low), abs(self.high))


@dataclass
class _Pass:
    """One forward-and-backward: the calls made inside each root's forward."""

    inner: dict[int, tuple[nn.Module, nn.Module]] = field(default_factory=dict)
    no_grad: dict[int, tuple[nn.Module, nn.Module]] = field(default_factory=dict)
    first_layer_seen: bool = False


class ModuleWatch:
    """What the global module hooks saw over the tracked passes."""

    def __init__(self) -> None:
        self.roots: weakref.WeakSet[nn.Module] = weakref.WeakSet()
        self._stack: list[nn.Module] = []
        self._root_grad = False  # whether gradients were on when the current root's forward began
        self._pass = _Pass()
        self.called: dict[int, tuple[weakref.ref, weakref.ref]] = {}
        self.outsiders: dict[int, tuple[weakref.ref, weakref.ref]] = {}
        self.no_grad: dict[int, tuple[weakref.ref, weakref.ref]] = {}
        self.input_scale: InputScale | None = None
        self.input_varies = False  # some read batch held two different numbers
        self._switched: dict[int, bool] = {}

    # -- global hooks --------------------------------------------------------------------

    def pre(self, module: nn.Module, args: tuple) -> None:
        if not self._stack:
            self.roots.add(module)
            _learn_label(module)
            self._root_grad = torch.is_grad_enabled()
        root = self._stack[0] if self._stack else module
        self._stack.append(module)
        if not trainable(module):
            return
        if module is not root:
            self._pass.inner[id(module)] = (root, module)
        if self._root_grad and not torch.is_grad_enabled():
            self._pass.no_grad[id(module)] = (root, module)
        if not self._pass.first_layer_seen:
            self._pass.first_layer_seen = True
            self._read_input(root, module, args)

    def post(self, module: nn.Module, args: tuple, output: Any) -> None:
        while self._stack:
            if self._stack.pop() is module:
                break

    # -- at a backward ---------------------------------------------------------------------

    def end_pass(self) -> None:
        """A backward starts: file this pass's calls under their roots."""
        current, self._pass = self._pass, _Pass()
        for key, (root, module) in current.inner.items():
            self.called.setdefault(key, (weakref.ref(root), weakref.ref(module)))
            if not _owns(root, module):
                self.outsiders.setdefault(key, (weakref.ref(root), weakref.ref(module)))
        for key, (root, module) in current.no_grad.items():
            self.no_grad.setdefault(key, (weakref.ref(root), weakref.ref(module)))

    def switched_roots(self, optimized: set[int]) -> list[nn.Module]:
        """Roots whose mode matters (dropout or batch norm inside) and that are trained."""
        found = []
        for root in list(self.roots):
            key = id(root)
            if key not in self._switched:
                self._switched[key] = any(isinstance(m, _SWITCHED) for m in root.modules())
            if self._switched[key] and any(id(p) in optimized for p in root.parameters()):
                found.append(root)
        return found

    def _read_input(self, root: nn.Module, module: nn.Module, args: tuple) -> None:
        if isinstance(module, _NORMS) or not args or not isinstance(args[0], torch.Tensor):
            return
        x = args[0]
        if not x.is_floating_point() or x.numel() < 16:
            return
        with torch.no_grad():
            flat = x.detach().float().reshape(-1)
            low, high, mean, std = torch.stack(
                [flat.min(), flat.max(), flat.mean(), flat.std()]
            ).tolist()
        if not all(math.isfinite(v) for v in (low, high, mean, std)):
            return
        self.input_varies = self.input_varies or high > low
        name = root_label(root) if module is root else qualified(root, name_in(root, module))
        scale = InputScale(name, mean, std, low, high)
        if self.input_scale is None or scale.spread > self.input_scale.spread:
            self.input_scale = scale


def _owns(root: nn.Module, module: nn.Module) -> bool:
    return any(m is module for m in root.modules())


def name_in(root: nn.Module, module: nn.Module) -> str:
    """The module's dotted name under ``root``, or its type when it is not registered there."""
    for name, candidate in root.named_modules():
        if candidate is module:
            return name or root_label(root)
    return type(module).__name__


def container_of(root: nn.Module, module: nn.Module) -> tuple[str, str] | None:
    """Where a module the root calls but does not register is kept: a list, tuple or dict
    attribute of the root or of one of its submodules, as (its name with the index or key,
    the container: "Net.layers[1]", "Net.layers (a list)")."""
    seen = 0
    for owner_name, owner in root.named_modules():
        for attr, value in vars(owner).items():
            seen += 1
            if seen > _SCAN_LIMIT:
                return None
            key = _key_in(value, module)
            if key is not None:
                prefix = f"{qualified(root, owner_name)}.{attr}"
                return f"{prefix}[{key}]", f"{prefix} (a {type(value).__name__})"
    return None


def _key_in(value: Any, module: nn.Module) -> str | None:
    if isinstance(value, dict):
        items = list(value.items())[:1000]
        return next((repr(k) for k, v in items if v is module), None)
    if isinstance(value, (list, tuple)):
        return next((str(i) for i, v in enumerate(value[:1000]) if v is module), None)
    return None
