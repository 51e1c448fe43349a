"""index-out-of-range: a class target beyond the logits' classes, or an index beyond an
embedding's rows.

The value, the batch row holding it and the size it exceeds are read from the tensors of the
frame that raised (the loss's ``input`` and ``target``, the embedding module and its input).
"""

from __future__ import annotations

import re
from typing import Any

from diagnose.crash.live import Scene, module_name
from diagnose.crash.origin import origin_site
from diagnose.report import Crash

FAMILY = "index-out-of-range"
_TARGET = re.compile(r"Target (-?\d+) is out of bounds")
_INDEX = re.compile(r"index out of range in self")


def matches(message: str) -> bool:
    return bool(_TARGET.search(message) or _INDEX.search(message))


def _bad_rows(values: Any, size: int, ignore: int | None) -> tuple[list[int], int, int]:
    flat = values.reshape(-1)
    bad = (flat < 0) | (flat >= size)
    if ignore is not None:
        bad &= flat != ignore
    rows = [int(i) for i in bad.nonzero().reshape(-1)[:8]]
    return rows, int(flat.min()), int(flat.max())


def explain(scene: Scene) -> Crash:
    import torch

    crash = Crash(family=FAMILY, chain=scene.chain())
    if _TARGET.search(scene.message):
        logits = scene.innermost_local("input", kind=torch.Tensor)
        target = scene.innermost_local("target", kind=torch.Tensor)
        ignore = scene.innermost_local("ignore_index", kind=int)
        if logits is None or target is None or logits.dim() < 2:
            crash.checked.append("the loss's logits and targets could not be read from its frame")
            return crash
        classes = int(logits.shape[1])
        rows, low, high = _bad_rows(target, classes, ignore)
        crash.expected, crash.input_shape = classes, [int(d) for d in target.shape]
        crash.got = int(target.reshape(-1)[rows[0]]) if rows else None
        crash.evidence.append(
            f"the logits have {classes} classes (targets 0..{classes - 1}); the targets run "
            f"{low}..{high}, and batch row{'s' if len(rows) > 1 else ''} "
            f"{', '.join(map(str, rows))} hold{'' if len(rows) > 1 else 's'} {crash.got}"
            + (" (labels counted from 1?)" if low >= 1 and high == classes else "")
        )
        for value, what in (
            (target, "the targets are made here"),
            (logits, "the logits are made here"),
        ):
            site = origin_site(scene, value, what=what)
            if site is not None:
                crash.sites.append(site)
        return crash
    for module, frame in reversed(scene.module_frames()):
        if isinstance(module, torch.nn.Embedding):
            indices = frame.f_locals.get("input")
            if not isinstance(indices, torch.Tensor):
                break
            rows, low, high = _bad_rows(indices, module.num_embeddings, None)
            root = scene.root_call()
            crash.module = module_name(module, [root[0]] if root else [])
            crash.module_type = "Embedding"
            crash.sizes = {
                "num_embeddings": module.num_embeddings,
                "embedding_dim": module.embedding_dim,
            }
            crash.expected, crash.got = module.num_embeddings, high
            crash.input_shape = [int(d) for d in indices.shape]
            crash.evidence.append(
                f"`{crash.module}` = Embedding({module.num_embeddings}, {module.embedding_dim}) takes "
                f"indices 0..{module.num_embeddings - 1}; its input runs {low}..{high} (flat "
                f"positions {', '.join(map(str, rows))})"
            )
            site = origin_site(scene, indices, what="the indices are made here")
            if site is not None:
                crash.sites.append(site)
            return crash
    crash.checked.append("no embedding or loss on the stack whose indices could be read")
    return crash
