"""Facts -> symptoms: what went wrong, how sure we are (0..1), and the evidence in plain words.

One module per family, as in ``rules/``: ``data``, ``numerics``, ``precision``,
``optimization``, ``exception``, ``learning``, ``domains`` (an op at the edge of its domain), ``masking`` (a fully masked softmax row), ``ctc`` (an impossible CTC alignment), ``crash`` (an exception explained from the live run) (a finite run that cannot learn). Each detector is declared where it is defined with
``@symptom(id, title=..., related_tags=[...])`` (see ``registry``); ``TITLES``, ``DETECTORS``
and ``OP_DETECTORS`` are views of that registry. A detector reads the facts (and, for wording,
the report) and returns one Symptom or None. Confidences are hand-set heuristics: strong,
direct evidence (the op and its input statistics, an activation at the dtype's limit) scores
0.85-0.95; indirect evidence (a setting that is unusual, a trend) scores less and adds up
through a noisy-OR. The rules in ``rules/`` decide which fixes a symptom supports; nothing
here knows about fixes.

"""

from __future__ import annotations

import importlib

from diagnose.facts.symptoms.detect import detect_symptoms
from diagnose.facts.symptoms.registry import (
    ANOMALY,
    NONFINITE,
    REGISTRY,
    SymptomRegistry,
    SymptomSpec,
    symptom,
)
from diagnose.formatting import num as fmt  # the name detectors' callers knew

# The order the detectors run in (and equal confidences keep).
FAMILIES = (
    "data",
    "numerics",
    "domains",
    "masking",
    "ctc",
    "precision",
    "optimization",
    "exception",
    "crash",
    "learning",
)
for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")

TITLES: dict[str, str] = REGISTRY.titles()
DETECTORS = REGISTRY.detectors(NONFINITE)
# An autograd anomaly error names the op, so these apply to it as well.
OP_DETECTORS = REGISTRY.detectors(ANOMALY)

__all__ = [
    "DETECTORS",
    "FAMILIES",
    "OP_DETECTORS",
    "REGISTRY",
    "TITLES",
    "SymptomRegistry",
    "SymptomSpec",
    "detect_symptoms",
    "fmt",
    "symptom",
]
