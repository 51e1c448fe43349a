"""The frames of the report: the last module calls before the event, as the table shows them.

Calls of earlier windows come from the tracer's ring buffer (their host values kept, their
tensors let go); the event's own window adds its calls up to the producer, whose row is
marked. An op born outside any module (a hand-written loss) gets a row of its own at the end.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from diagnose.report import Frame
from diagnose.tracer.explain import Namer
from diagnose.tracer.ops import OpFinding
from diagnose.tracer.stats import full_stats, host_stats
from diagnose.tracer.window import Rec


def frames(
    recs: list[Rec], producer: Rec | None, limit: int, name: Namer, step: int, upto: bool = True
) -> list[Frame]:
    """The last ``limit`` of ``recs`` (calls, oldest first), up to the producer if it is one
    of them and ``upto``; ``step`` is the tracer's, to tell whether a call's weights are still
    its own."""
    if upto and producer is not None and producer in recs:
        recs = recs[: recs.index(producer) + 1]
    return [frame(i, rec, rec is producer, name, step) for i, rec in enumerate(recs[-limit:])]


def frame(index: int, rec: Rec, producer: bool, name: Namer, step: int) -> Frame:
    module = rec.module
    # The weights are read now: they are the call's own only if no update ran since.
    weights = (
        [full_stats(n, p) for n, p in module.named_parameters(recurse=False)]
        if rec.step == step
        else []
    )
    phase = "loss" if isinstance(module, torch.nn.modules.loss._Loss) else rec.phase
    return Frame(
        index=rec.call if rec.call >= 0 else index,
        step=rec.step,
        phase=phase,
        module=name(module),
        module_type=type(module).__name__,
        inputs=list(_stats(rec.ins, rec.invalues)),
        outputs=list(_stats(rec.outs, rec.values or ())),
        weights=weights,
        producer=producer,
    )


def _stats(entries: list, values: Iterable[tuple[float, float]]) -> Iterable:
    for (n, d, sh, s), (lo, hi) in zip(entries, values, strict=False):
        if s >= 0:
            yield host_stats(n, d, sh, lo, hi)


def op_frame(index: int, step: int, finding: OpFinding) -> Frame:
    """The row of an op that made the value outside any module."""
    return Frame(
        index=index,
        step=step,
        phase="backward" if finding.backward else "loss",
        module=None,
        module_type=finding.op,
        inputs=list(finding.inputs),
        outputs=[finding.output] if finding.output is not None else [],
        producer=True,
    )
