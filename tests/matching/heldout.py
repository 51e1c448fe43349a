"""The checks every held-out sample of real error output owes, whatever sample it is."""

from __future__ import annotations

from typing import Any

from diagnose.records import load_records
from tests.matching.test_real_sample import measure

Sample = list[dict[str, Any]]


def check_held_out_from(sample: Sample, earlier: Sample) -> None:
    """One text per thread, and no thread or text of an earlier sample."""
    urls = [e["url"] for e in sample]
    assert len(set(urls)) == len(urls)
    assert not set(urls) & {e["url"] for e in earlier}
    assert not {e["text"].strip() for e in sample} & {e["text"].strip() for e in earlier}


def check_expected_shipped(sample: Sample) -> None:
    shipped = {record.slug for record in load_records().records}
    assert {e["expect"] for e in sample if e["expect"]} <= shipped


def check_known_lists(sample: Sample, known_wrong: dict, known_missed: dict) -> None:
    assert set(known_wrong) <= {e["url"] for e in sample}
    assert set(known_missed) <= {e["url"] for e in sample if e["expect"]}


def check_missed_known(sample: Sample, answers: list[str | None], known_missed: dict) -> None:
    """A labelled message with no answer is one of the known misses (a new miss fails)."""
    missed = {
        entry["url"]
        for entry, got in zip(sample, answers, strict=True)
        if entry["expect"] and got is None
    }
    assert missed <= set(known_missed), sorted(missed - set(known_missed))


def check_figures(
    label: str,
    sample: Sample,
    answers: list[str | None],
    known_wrong: dict,
    floors: tuple[float, float, float],
) -> None:
    """The figures (printed) stay at or above the floors: recall@1, precision, honest share."""
    figures = measure(answers, sample)
    honest_share = figures.honest / figures.unlabelled
    right_of_all = sum(1 for e, got in zip(sample, answers, strict=True) if got == e["expect"])
    print(
        f"\n{label} of {len(sample)} messages: {figures}; "
        f"honest no-match share {honest_share:.3f}; "
        f"right answer (record or honest no-match) for {right_of_all} of {len(sample)}"
    )
    recall_floor, precision_floor, honest_floor = floors
    assert figures.wrong <= len(known_wrong), str(figures)
    assert figures.recall_at_1 >= recall_floor, str(figures)
    assert figures.precision >= precision_floor, str(figures)
    assert honest_share >= honest_floor, str(figures)
