"""A run that stayed finite but cannot learn: the symptoms of ``diagnose.learning.findings``.

The findings are judged together (a cause found is not restated as the flat curve it makes),
so each declared symptom's detector reads its own id out of that one judgement.
"""

from __future__ import annotations

from collections.abc import Callable

from diagnose.facts.extract import Facts
from diagnose.facts.symptoms.registry import FINITE, symptom
from diagnose.learning.findings import TITLES, detect_learning_symptoms
from diagnose.report import Report, Symptom

RELATED: dict[str, tuple[str, ...]] = {
    "gradients-never-cleared": ("gradient-accumulation", "optimizer"),
    "backward-without-step": ("optimizer",),
    "parameters-not-in-optimizer": ("optimizer", "frozen-parameters"),
    "unregistered-submodules": ("parameters", "state-dict"),
    "gradient-flow-cut": ("autograd", "frozen-parameters"),
    "probabilities-into-logit-loss": ("cross-entropy", "loss"),
    "target-shape-broadcast": ("broadcasting", "loss"),
    "class-axis-misplaced": ("cross-entropy", "shape-mismatch"),
    "model-in-eval-mode": ("batchnorm", "normalization"),
    "lr-schedule-collapse": ("lr-scheduler",),
    "lr-too-low": ("learning-rate", "optimizer"),
    "loss-at-chance": ("labels", "cross-entropy"),
    "unnormalized-inputs": ("normalization", "initialization"),
    "dying-relus": ("initialization", "learning-rate"),
    "saturated-activations": ("initialization",),
    "vanishing-gradients": ("gradients", "initialization"),
    "weight-decay-too-strong": ("optimizer", "learning-rate"),
    "constant-inputs": ("dataloader", "normalization"),
    "gradients-clipped-to-zero": ("gradient-clipping", "optimizer"),
    "training-calls-out-of-order": ("optimizer", "autograd"),
    "output-range-excludes-targets": ("loss", "normalization"),
}


def _reader(symptom_id: str) -> Callable[[Facts, Report], Symptom | None]:
    def detect(facts: Facts, report: Report) -> Symptom | None:
        return next((s for s in detect_learning_symptoms(report) if s.id == symptom_id), None)

    detect.__name__ = detect.__qualname__ = symptom_id.replace("-", "_")
    return detect


for _id, _title in TITLES.items():
    symptom(_id, title=_title, related_tags=RELATED.get(_id, ()), reads=(FINITE,))(_reader(_id))
