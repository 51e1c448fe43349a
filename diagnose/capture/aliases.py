"""Where loaded modules have bound a function under a name of their own, found cheaply.

``from torch.nn.utils import clip_grad_norm_`` copies the function into the importing module's
namespace, so wrapping the attribute in ``torch.nn.utils.clip_grad`` does not reach calls made
through that binding. Comparing every value of every loaded module (tens of thousands of
values: ~10 ms with torch alone, ~30 ms once transformers is loaded) is too slow for a capture
that is installed on every traced run, so the modules are looked at according to what they are:

- the standard library never binds torch functions: skipped (by top-level package name);
- installed libraries (a file under ``site-packages``/``dist-packages``, torch included): only
  the functions' own names are looked up, a few dictionary reads per module. That finds
  ``torch.nn.utils`` re-exporting ``clip_grad_norm_``; torch, transformers, accelerate and
  Lightning reach the clip functions as attributes and never rename them on import;
- everything else, which is the code being diagnosed (``__main__``, the user's own modules,
  tests, an editable checkout, modules without a file): every value is compared by identity,
  so ``from torch.nn.utils import clip_grad_norm_ as clip`` is found too. Such modules can
  already be loaded at install time: the Python API, and the framework callbacks, install
  the capture from inside the running script.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

_LIBRARY_MARKERS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
# The standard library never imports torch; our own modules never bind the clip functions.
_SKIPPED_ROOTS = (
    frozenset(sys.stdlib_module_names)
    | frozenset(sys.builtin_module_names)
    | {__name__.split(".")[0]}
)

# What a top-level package is, decided once per package from where its root module lives.
_SKIP, _LIBRARY, _CODE, _PER_MODULE = range(4)

Binding = tuple[ModuleType, str, Any]


def find_bindings(
    originals: Sequence[Any], names: Iterable[str], skip: Iterable[ModuleType] = ()
) -> list[Binding]:
    """``(module, name, original)`` for every module-level name bound to one of ``originals``.

    ``names`` are the names the originals are usually imported under (all that is looked up
    in installed libraries); modules in ``skip`` are not looked at, nor is anything in
    ``sys.modules`` without a namespace dict (a stand-in object some libraries put there).
    Each module is looked at once, even when it is registered under two names.
    """
    names = tuple(names)
    skipped = {id(module) for module in skip}
    kinds: dict[str, int] = {}
    found: dict[tuple[int, str], Binding] = {}
    for key, module in list(sys.modules.items()):
        root = key.partition(".")[0] if type(key) is str else ""
        kind = kinds.get(root)
        if kind is None:
            kind = kinds[root] = _package_kind(root)
        if kind == _SKIP or id(module) in skipped:
            continue
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is not dict:
            continue
        if kind == _PER_MODULE:
            kind = _LIBRARY if _is_library(namespace.get("__file__")) else _CODE
        if kind == _LIBRARY:
            for name in names:
                value = namespace.get(name)
                if value is not None and any(value is original for original in originals):
                    found[id(module), name] = (module, name, value)
        else:
            for binding in _scan(module, namespace, originals):
                found[id(module), binding[1]] = binding
    return list(found.values())


def _package_kind(root: str) -> int:
    """How the modules of the top-level package ``root`` are looked at."""
    if not root or root in _SKIPPED_ROOTS:
        return _SKIP
    namespace = getattr(sys.modules.get(root), "__dict__", None)
    if not isinstance(namespace, dict):
        return _PER_MODULE
    where = namespace.get("__file__")
    if not isinstance(where, str):  # a namespace package: where its first portion lives
        where = next(iter(getattr(namespace.get("__path__"), "_path", None) or ()), None)
    if not isinstance(where, str):
        return _PER_MODULE
    return _LIBRARY if _is_library(where) else _CODE


def _is_library(path: Any) -> bool:
    """True for a file of an installed distribution."""
    return isinstance(path, str) and (_LIBRARY_MARKERS[0] in path or _LIBRARY_MARKERS[1] in path)


def _scan(module: ModuleType, namespace: dict[str, Any], originals: Sequence[Any]) -> list[Binding]:
    """Every name in ``namespace`` bound to one of ``originals`` (compared by identity)."""
    wanted = {id(original) for original in originals}
    if wanted.isdisjoint(map(id, list(namespace.values()))):
        return []
    return [
        (module, name, value)
        for name, value in list(namespace.items())
        if any(value is original for original in originals)
    ]
