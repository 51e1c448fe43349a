"""Steps of a loop without a torch optimizer: each backward pass is one.

A script that updates its weights by hand (``p -= lr * p.grad`` under ``no_grad``) has no
optimizer step for the tracer's check to hang on; its backward pass is the step instead (the
rule the learning watch counts passes by: no optimizer made, every backward a step). The
gradients checked at its end are the model's parameters', or, for a script with no module
at all, the leaf tensors its first loss was computed from, found once on that loss's graph.
"""

from __future__ import annotations

from typing import Any

import torch

_MAX_NODES = 100_000  # a graph walked once; bounded however large the graph


class BackwardSteps:
    """What a loop without an optimizer checks at the end of each backward pass."""

    def __init__(self) -> None:
        self.ended = False  # the last step was ended by its backward pass
        self._leaves: list[torch.Tensor] | None = None  # a module-free script's weights

    def before(self, losses: list[Any], roots: list[torch.nn.Module]) -> None:
        """Before the first backward of a script with no module: the leaves of its loss,
        read now, while the graph that holds them is still there."""
        if self._leaves is None and not roots:
            self._leaves = graph_leaves(losses)

    def with_grads(self, roots: list[torch.nn.Module]) -> list[torch.Tensor]:
        """The weights with a gradient now: the roots' parameters, or the loss's leaves."""
        held = [p for root in roots for p in root.parameters()] if roots else self._leaves or []
        seen: set[int] = set()
        found = []
        for p in held:
            if p.grad is not None and id(p) not in seen:
                seen.add(id(p))
                found.append(p)
        return found


def graph_leaves(losses: list[Any]) -> list[torch.Tensor]:
    """The tensors autograd accumulates gradients into, on the graphs of ``losses``."""
    nodes = [t.grad_fn for t in losses if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen: set[int] = set()
    leaves: list[torch.Tensor] = []
    while nodes and len(seen) < _MAX_NODES:
        node = nodes.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
        nodes.extend(next_node for next_node, _ in node.next_functions)
    return leaves
