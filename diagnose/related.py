"""Dataset records related to a diagnosis that has no error message to match.

A non-finite event is not an exception, so the matcher has no text to work on; yet the same
root cause is what other tools report as DebugUnderflowOverflow aborts, anomaly-mode errors,
loss-scaler messages or a framework's nan checks. Each symptom declares its dataset tags where
it is defined (``@symptom(..., related_tags=[...])`` in ``diagnose.facts.symptoms``); records
sharing more of them, for more confident symptoms, rank higher. A record shares two at least (or
the one a symptom declares), one of them more than "nan", and belongs to torch or a library
the run imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from diagnose.report import MatchRef, Symptom


def load_related_tags() -> dict[str, list[str]]:
    """Symptom id -> record tags, as the symptoms declare them."""
    from diagnose.facts.symptoms import REGISTRY

    return REGISTRY.related_tags()


# Tags every kind of non-finite record carries: shared alone, they relate nothing.
GENERIC_TAGS = frozenset({"nan", "inf", "numerical-stability"})

# Repositories whose package is imported under another name than the repository's.
_IMPORT_NAMES: dict[str, tuple[str, ...]] = {
    "pytorch/pytorch": ("torch",),
    "pytorch/vision": ("torchvision",),
    "huggingface/pytorch-image-models": ("timm",),
    "Lightning-AI/pytorch-lightning": ("lightning", "pytorch_lightning", "lightning_fabric"),
    "apache/arrow": ("pyarrow",),
    "open-mmlab/mmdetection": ("mmdet",),
}


def import_names(repo: str) -> tuple[str, ...]:
    """The names a repository's package is imported by (``microsoft/DeepSpeed``: deepspeed)."""
    return _IMPORT_NAMES.get(repo) or (repo.rpartition("/")[2].lower().replace("-", "_"),)


def related_records(
    symptoms: Sequence[Symptom],
    records: Iterable[Any],
    limit: int = 5,
    tags_by_symptom: dict[str, list[str]] | None = None,
    libraries: Iterable[str] | None = None,
) -> list[MatchRef]:
    """Records related to ``symptoms``, best first, each saying which symptom and tags.

    ``libraries``: the packages the run imported, when known; a record of another library
    (a fairseq or detectron2 check, for a run that used neither) is not related to it.
    """
    tags_by_symptom = load_related_tags() if tags_by_symptom is None else tags_by_symptom
    wanted = [(s, tags_by_symptom[s.id]) for s in symptoms if tags_by_symptom.get(s.id)]
    if not wanted:
        return []
    used = None if libraries is None else {*libraries, "torch"}
    scored: list[tuple[float, int, MatchRef]] = []
    for order, record in enumerate(records):
        if used is not None and not used.intersection(import_names(record.repo or "")):
            continue
        record_tags = set(record.tags or ())
        best: tuple[float, Symptom, list[str]] | None = None
        for symptom, tags in wanted:
            shared = [t for t in tags if t in record_tags]
            if len(shared) < min(2, len(tags)) or set(shared) <= GENERIC_TAGS:
                continue
            score = symptom.confidence * len(shared) / len(tags)
            if best is None or score > best[0]:
                best = (score, symptom, shared)
        if best is None:
            continue
        score, symptom, shared = best
        reason = f"related to {symptom.title or symptom.id}: tags {', '.join(shared)}"
        scored.append(
            (
                score,
                order,
                MatchRef(
                    record_id=record.id,
                    slug=record.slug,
                    score=round(score, 3),
                    reason=reason,
                    error_message=record.errorMessage,
                    solutions=list(record.solutions or []),
                    example_fix=record.exampleFix,
                    kind="related",
                ),
            )
        )
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [ref for _, _, ref in scored[:limit]]
