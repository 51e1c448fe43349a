"""What the activations and the gradients through the depth look like on the sampled steps.

A network whose ReLUs output almost only zeros (dead units: a large negative bias, or a step
that pushed every pre-activation below 0), whose tanh/sigmoid inputs lie far in the flat tails
(beyond +-5 the derivative is below 2e-4), or whose first layer gets a gradient orders of
magnitude below the last one's, stays finite and does not learn. Reading that costs a
reduction per activation module, so it is armed for one forward pass on the sampled steps
only: a global forward hook (torch's registry, nothing put on the user's modules) queues the
reductions on the device, and the next backward reads them in one host read.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks

from diagnose.learning.modules import qualified, trainable

SATURATED = 5.0  # |x| beyond which tanh and sigmoid are flat (derivative < 2e-4 for tanh)
_KINDS: tuple[tuple[type[nn.Module], str], ...] = (
    (nn.ReLU, "relu"),
    (nn.Tanh, "tanh"),
    (nn.Sigmoid, "sigmoid"),
)
_MODULES = 64  # activation modules recorded per pass
LAYERS_SHOWN = 24  # layers whose gradient norms a report keeps (spread through the depth)
# not the ends whose gradients are compared: an embedding's rows and a norm's scale get
# gradients of another size by their nature
_NOT_LAYERS = (
    nn.Embedding,
    nn.EmbeddingBag,
    nn.modules.batchnorm._BatchNorm,
    nn.LayerNorm,
    nn.GroupNorm,
)


@dataclass
class ActivationStat:
    """One activation module over the checked passes: its latest share of dead (ReLU) or
    saturated (tanh/sigmoid) values and how many checks saw it."""

    name: str
    kind: str
    share: float
    checks: int = 1
    first_share: float | None = None  # the first check's share: what the init gave


class ActivationWatch:
    """Armed for the forward of a sampled step; read at the backward that follows it."""

    def __init__(self) -> None:
        self.stats: dict[str, ActivationStat] = {}
        self.first_grad: tuple[str, float] | None = None
        self.last_grad: tuple[str, float] | None = None
        self.layer_grads: list[tuple[str, float]] = []
        self._handle: Any = None
        self._pending: list[tuple[nn.Module, str, torch.Tensor]] = []
        self._order: list[weakref.ref] = []  # trainable modules in forward order
        self._layers: list[weakref.ref] = []  # the armed pass's layers, first call of each
        self._names: dict[int, str] = {}

    @property
    def armed(self) -> bool:
        return self._handle is not None

    def arm(self, guard: Any = None) -> None:
        """Watch the next forward; ``guard`` wraps the hook (the watch's thread and error
        guard)."""
        if self._handle is None:
            self._pending, self._order = [], []
            hook = self._post if guard is None else guard(self._post)
            self._handle = module_hooks.register_module_forward_hook(hook)

    def stop(self) -> None:
        """The watch exits: an armed hook comes off, the forward it queued is dropped (no
        backward ended it)."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        self._pending, self._order = [], []

    def disarm(self, roots: list[nn.Module]) -> None:
        """The armed forward ended (a backward starts): read what it queued."""
        if self._handle is None:
            return
        self._handle.remove()
        self._handle = None
        pending, self._pending = self._pending, []
        if len(self._order) >= 2:
            self._layers = _spread(_first_calls(self._order), LAYERS_SHOWN)
        self._order = []
        if not pending:
            return
        values = torch.stack([share.float() for _, _, share in pending]).tolist()
        for (module, kind, _), share in zip(pending, values, strict=True):
            name = self._name(module, roots)
            stat = self.stats.get(name)
            if stat is None:
                self.stats[name] = ActivationStat(name, kind, share, first_share=share)
            else:
                stat.share, stat.checks = share, stat.checks + 1

    def read_gradients(self, roots: list[nn.Module]) -> None:
        """Before the step that follows an armed pass: the gradient norm of each layer it ran
        (at most ``LAYERS_SHOWN``, the first and the last always among them), in one host read.
        """
        layers, self._layers = self._layers, []
        modules = [m for m in (ref() for ref in layers) if m is not None]
        if len(modules) != len(layers) or len(modules) < 2:
            return
        grads = [[p.grad for p in trainable(m) if p.grad is not None] for m in modules]
        if not grads[0] or not grads[-1]:
            return
        kept = [(m, g) for m, g in zip(modules, grads, strict=True) if g]
        with torch.no_grad():
            flat = torch._foreach_norm([g for _, group in kept for g in group])
            norms, at = [], 0
            for _, group in kept:
                norms.append(torch.stack(flat[at : at + len(group)]).float().norm())
                at += len(group)
            values = torch.stack(norms).tolist()
        self.layer_grads = [
            (self._name(m, roots), v) for (m, _), v in zip(kept, values, strict=True)
        ]
        self.first_grad, self.last_grad = self.layer_grads[0], self.layer_grads[-1]

    def _post(self, module: nn.Module, args: tuple, output: Any) -> None:
        if len(self._order) < 10_000 and not isinstance(module, _NOT_LAYERS) and trainable(module):
            self._order.append(weakref.ref(module))
        kind = next((k for t, k in _KINDS if isinstance(module, t)), None)
        if kind is None or len(self._pending) >= _MODULES:
            return
        with torch.no_grad():
            if kind == "relu":
                value = output if isinstance(output, torch.Tensor) else None
                share = None if value is None else (value == 0).float().mean()
            else:
                value = args[0] if args and isinstance(args[0], torch.Tensor) else None
                share = None if value is None else (value.abs() > SATURATED).float().mean()
        if share is not None and value.is_floating_point() and value.numel():
            self._pending.append((module, kind, share))

    def _name(self, module: nn.Module, roots: list[nn.Module]) -> str:
        key = id(module)
        if key not in self._names:
            self._names[key] = next(
                (
                    qualified(root, name)
                    for root in roots
                    for name, m in root.named_modules()
                    if m is module
                ),
                type(module).__name__,
            )
        return self._names[key]


def _first_calls(order: list[weakref.ref]) -> list[weakref.ref]:
    """Each module once, where the pass first called it (a cell run per time step repeats)."""
    seen: set[int] = set()
    out: list[weakref.ref] = []
    for ref in order:
        module = ref()
        if module is not None and id(module) not in seen:
            seen.add(id(module))
            out.append(ref)
    return out


def _spread(items: list[weakref.ref], most: int) -> list[weakref.ref]:
    """At most ``most`` of ``items``, evenly through them, the first and the last kept."""
    if len(items) <= most:
        return items
    step = (len(items) - 1) / (most - 1)
    return [items[round(i * step)] for i in range(most)]
