"""Module names as the script spells them, for every model the tracer has seen run.

A model's submodules are named as in ``model.named_modules()``; ``torch.compile``'s wrapper
step (``_orig_mod``) is left out, and when two models have submodules of one name (a GAN's two
``nn.Sequential``s, both with a ``0``) each model's names start with what the script calls it
(``netG.0``, ``netD.0``).
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from diagnose.tracer.ops import SKIP_PREFIXES


class ModuleNames:
    """The root models seen so far and the name of each of their modules."""

    def __init__(self) -> None:
        self.roots: list[torch.nn.Module] = []
        self._names: dict[int, str] = {}
        self._labels: dict[int, str] = {}  # what the script calls each root model

    def __contains__(self, module: Any) -> bool:
        return id(module) in self._names

    def name(self, module: Any) -> str | None:
        if module is None:
            return None
        return self._names.get(id(module)) or type(module).__name__

    def add_root(self, root: torch.nn.Module) -> None:
        """A model called for the first time from outside any module call."""
        self.roots.append(root)
        self._labels[id(root)] = _script_name_of(root)
        mine = {id(mod) for _, mod in root.named_modules()}
        others = {name for key, name in self._names.items() if key not in mine}
        paths = {_module_path(name) for name, _ in root.named_modules() if name}
        for name, mod in root.named_modules():
            if id(mod) not in self._names or name:
                self._names[id(mod)] = _module_path(name) or type(_compiled(mod)).__name__
        if paths & others:
            for other in self.roots:
                if any(self._names.get(id(mod)) in paths for _, mod in other.named_modules()):
                    self._prefix_names(other)

    def _prefix_names(self, root: torch.nn.Module) -> None:
        labels = [self._labels[id(r)] for r in self.roots if r is not root]
        label = self._labels[id(root)]
        if label in labels:  # two unnamed roots of one class
            label = f"{label}#{self.roots.index(root) + 1}"
            self._labels[id(root)] = label
        for name, mod in root.named_modules():
            self._names[id(mod)] = f"{label}.{_module_path(name)}" if name else label

    def param_owners(self) -> dict[int, tuple[str, str, torch.nn.Module]]:
        """Each parameter's (module name, parameter name, module), by the parameter's id."""
        owners: dict[int, tuple[str, str, torch.nn.Module]] = {}
        for root in self.roots:
            for mname, mod in root.named_modules():
                for pname, p in mod.named_parameters(recurse=False):
                    owners.setdefault(id(p), (mname or type(root).__name__, pname, mod))
        return owners


def _module_path(name: str) -> str:
    """A module's name as the script spells it: ``torch.compile`` wraps a model in a module
    whose ``_orig_mod`` is the model, a step no attribute path of the script has."""
    if "_orig_mod" not in name:
        return name
    return ".".join(part for part in name.split(".") if part != "_orig_mod")


def _script_name_of(root: torch.nn.Module) -> str:
    """The name the calling code gives a root model (``netG``, ``self.generator``), read
    from the first frame outside torch and diagnose; else its class name."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(SKIP_PREFIXES):
        frame = frame.f_back
    try:
        if frame is not None:
            owner = frame.f_locals.get("self")
            modules = getattr(owner, "_modules", None)
            for space in (
                frame.f_locals,
                modules if isinstance(modules, dict) else {},
                frame.f_globals,
            ):
                name = next((k for k, v in space.items() if v is root and k != "self"), None)
                if isinstance(name, str):
                    return name
    except Exception:  # odd objects in the caller's namespace: the class name will do
        pass
    return type(_compiled(root)).__name__


def _compiled(module: Any) -> Any:
    """The model inside ``torch.compile``'s wrapper (for its class name), else the module."""
    inner = getattr(module, "_orig_mod", None)
    return _compiled(inner) if isinstance(inner, torch.nn.Module) else module
