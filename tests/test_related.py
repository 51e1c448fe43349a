"""A non-finite event has no message to match: records related to its symptoms stand in."""

from __future__ import annotations

from diagnose.facts.symptoms import TITLES
from diagnose.records import load_records
from diagnose.related import load_related_tags, related_records
from diagnose.report import Symptom

RECORDS = list(load_records().records)


def test_every_mapped_symptom_exists_and_every_tag_is_used_by_some_record():
    tags_in_dataset = {t for r in RECORDS for t in r.tags}
    for symptom_id, tags in load_related_tags().items():
        assert symptom_id in TITLES, symptom_id
        assert set(tags) <= tags_in_dataset, (symptom_id, set(tags) - tags_in_dataset)


def test_fp16_overflow_brings_the_fp16_overflow_records_first():
    refs = related_records(
        [Symptom(id="fp16-overflow", confidence=0.9, title="fp16 overflow")], RECORDS
    )
    slugs = [r.slug for r in refs]
    assert "value-cannot-be-converted-without-overflow" in slugs[:3]
    assert all(r.kind == "related" and "fp16 overflow" in r.reason for r in refs)
    assert [r.score for r in refs] == sorted((r.score for r in refs), reverse=True)


def test_more_confident_symptoms_lead():
    weak_fp16 = Symptom(id="fp16-overflow", confidence=0.2)
    strong_log = Symptom(id="log-domain", confidence=0.95)
    refs = related_records([weak_fp16, strong_log], RECORDS, limit=2)
    assert all("log-domain" in r.reason for r in refs)


def test_no_related_records_without_a_mapped_symptom():
    assert related_records([], RECORDS) == []
    assert related_records([Symptom(id="script-exception", confidence=1.0)], RECORDS) == []


LR_HIGH = [Symptom(id="lr-too-high", confidence=0.95, title="learning rate too high")]


def _repo(slug: str) -> str:
    return next(r.repo for r in RECORDS if r.slug == slug)


def test_a_run_that_used_no_other_library_is_shown_records_of_torch_only():
    refs = related_records(LR_HIGH, RECORDS, libraries=["numpy"])
    assert refs and {_repo(r.slug) for r in refs} == {"pytorch/pytorch"}


def test_a_library_the_run_imported_keeps_its_records_under_any_of_its_import_names():
    unknown = {_repo(r.slug) for r in related_records(LR_HIGH, RECORDS, limit=50)}
    assert "Lightning-AI/pytorch-lightning" in unknown  # without what the run imported
    for name in ("lightning", "pytorch_lightning"):
        refs = related_records(LR_HIGH, RECORDS, limit=50, libraries=[name])
        assert "Lightning-AI/pytorch-lightning" in {_repo(r.slug) for r in refs}
    refs = related_records(LR_HIGH, RECORDS, limit=50, libraries=["fairseq"])
    assert {_repo(r.slug) for r in refs} == {"pytorch/pytorch", "facebookresearch/fairseq"}


def test_generic_tags_alone_relate_no_record():
    nan_input = Symptom(id="nonfinite-input", confidence=0.95)
    tags = set(load_related_tags()["nonfinite-input"])
    for ref in related_records([nan_input], RECORDS, limit=50):
        record = next(r for r in RECORDS if r.id == ref.record_id)
        assert (set(record.tags) & tags) - {"nan", "inf", "numerical-stability"}, ref.slug
