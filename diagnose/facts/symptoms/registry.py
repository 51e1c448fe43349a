"""The symptom registry: each symptom is declared once, where its detector is defined.

    @symptom("log-domain", title="log of zero or of a negative number",
             related_tags=["anomaly-detection", "numerical-stability", "nan"], anomaly=True)
    def log_domain(f: Facts, report: Report) -> Symptom | None: ...

A declaration names the symptom's id (what rules read as ``symptom: ...``), its title (what
users read), the dataset tags of records related to it (``diagnose.related``), and which
events it reads. One detector may declare several ids (the non-finite batch is either the
inputs or the targets); it must return only ids it declared. Titles, detectors and related
tags elsewhere are views of this registry, so adding a symptom is one decorated function here
and one rule file under ``rules/<family>/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from diagnose.facts.extract import Facts
from diagnose.report import Report, Symptom

Detector = Callable[[Facts, Report], Symptom | None]

# Which events a detector reads: every non-finite event, also autograd's anomaly error that
# names a backward op, or an exception the script raised.
NONFINITE, ANOMALY, EXCEPTION = "nonfinite", "anomaly", "exception"
# ... or a run that stayed finite, read for whether it could learn.
FINITE = "finite"
# ... or an exception the script raised after its loss diverged (an overflow in its own
# logging, ``math.exp`` of a loss of 900): the divergence is the cause, read as for inf/nan.
DIVERGED = "diverged"


@dataclass(frozen=True)
class SymptomSpec:
    """One declared symptom. ``rules``: False for a symptom no built-in rule reads on purpose
    (``reason`` says why), so that the meta-test does not ask for one."""

    id: str
    title: str
    detector: Detector
    family: str
    related_tags: tuple[str, ...] = ()
    reads: frozenset[str] = frozenset({NONFINITE})
    rules: bool = True
    reason: str = ""


@dataclass
class SymptomRegistry:
    """Symptom id -> its declaration, in the order the detectors run (ties keep that order)."""

    specs: dict[str, SymptomSpec] = field(default_factory=dict)

    def add(self, spec: SymptomSpec) -> None:
        if spec.id in self.specs:
            raise ValueError(f"symptom {spec.id!r} is declared twice")
        self.specs[spec.id] = spec

    def __iter__(self) -> Iterator[SymptomSpec]:
        return iter(self.specs.values())

    def __contains__(self, symptom_id: object) -> bool:
        return symptom_id in self.specs

    def get(self, symptom_id: str) -> SymptomSpec | None:
        return self.specs.get(symptom_id)

    def titles(self) -> dict[str, str]:
        return {s.id: s.title for s in self}

    def related_tags(self) -> dict[str, list[str]]:
        return {s.id: list(s.related_tags) for s in self if s.related_tags}

    def detectors(self, *reads: str) -> list[Detector]:
        """Each detector once, in declaration order, that reads any of ``reads``."""
        found: list[Detector] = []
        for spec in self:
            if spec.reads & set(reads) and spec.detector not in found:
                found.append(spec.detector)
        return found

    def declared_by(self, detector: Detector) -> set[str]:
        return {s.id for s in self if s.detector is detector}

    def without(self, symptom_id: str) -> SymptomRegistry:
        """A copy with one symptom left out (what a meta-test checks against)."""
        return SymptomRegistry({k: v for k, v in self.specs.items() if k != symptom_id})

    def replaced(self, spec: SymptomSpec) -> SymptomRegistry:
        """A copy with one declaration changed."""
        return SymptomRegistry({**self.specs, spec.id: spec})


REGISTRY = SymptomRegistry()


def symptom(
    symptom_id: str,
    *,
    title: str,
    related_tags: list[str] | tuple[str, ...] = (),
    anomaly: bool = False,
    reads: tuple[str, ...] | None = None,
    rules: bool = True,
    reason: str = "",
    registry: SymptomRegistry | None = None,
) -> Callable[[Detector], Detector]:
    """Declare the symptom ``symptom_id`` detected by the decorated function.

    ``anomaly``: the detector also reads autograd's anomaly error naming a backward op.
    ``reads``: the events read, when not the usual non-finite ones. The family is the module's
    last name (``diagnose.facts.symptoms.precision`` -> ``precision``), as in ``rules/``.
    """
    if reads is None:
        reads = (NONFINITE, ANOMALY) if anomaly else (NONFINITE,)

    def declare(detector: Detector) -> Detector:
        (registry or REGISTRY).add(
            SymptomSpec(
                id=symptom_id,
                title=title,
                detector=detector,
                family=detector.__module__.rsplit(".", 1)[-1],
                related_tags=tuple(related_tags),
                reads=frozenset(reads),
                rules=rules,
                reason=reason,
            )
        )
        return detector

    return declare
