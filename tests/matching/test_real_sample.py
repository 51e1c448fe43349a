"""Real error output users pasted in public threads, matched as ``diagnose match`` matches it.

``real_sample.json`` holds messages found with generic searches ("CUDA error training",
"deepspeed error", "DataLoader worker error", ...), each kept as pasted with its thread's URL,
a short family label, and ``expect``: the slug of the shipped record whose explanation fits,
or null when no shipped record explains it. Relabelling (when new records are shipped) is
editing ``expect`` values only: every test below reads the labels from the file.

What the matcher owes these messages:

- precision: the first confident answer is never a wrong record (for a message no record
  explains, the honest answer is "no match");
- recall@1: the right record comes first for at least as many labelled messages as today.

The Chinese-CLIP paste (``EOFError: Ran out of input`` above torchrun's ``failed (exitcode: 1)``
line) was first labelled with the elastic record, when no record knew the EOFError; it is
labelled with the EOFError's record, the error the worker died of, since one exists.
Three extensions' ``undefined symbol: _ZN...`` imports (mmdet's roi_align, extension-cpp,
torch3d), labelled null when gathered, are labelled with the record for extensions built against
another torch, added later.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from diagnose.matcher import Matcher
from diagnose.records import load_records

SAMPLE_FILE = Path(__file__).with_name("real_sample.json")
SAMPLE: list[dict[str, Any]] = json.loads(SAMPLE_FILE.read_text(encoding="utf-8"))
IDS = [f"{i:03d}-{entry.get('family', '')}" for i, entry in enumerate(SAMPLE)]
# the share of labelled messages whose record ranks first today, rounded down: it may only rise
RECALL_AT_1_FLOOR = 0.96
# Wrong answers the matcher still gives, by the thread they came from, and why (each fails
# as expected until its cause is fixed, then fails for being right: remove it from here).
KNOWN_WRONG: dict[str, str] = {}


@dataclass(frozen=True)
class Figures:
    """How the matcher did on the sample."""

    labelled: int  # messages a shipped record explains
    right: int  # ... whose record came first
    unlabelled: int  # messages no shipped record explains
    honest: int  # ... answered "no match"
    answered: int  # messages with a confident first answer
    wrong: int  # ... where that answer is not the expected record

    @property
    def recall_at_1(self) -> float:
        return self.right / self.labelled if self.labelled else 1.0

    @property
    def precision(self) -> float:
        return (self.answered - self.wrong) / self.answered if self.answered else 1.0

    def __str__(self) -> str:
        return (
            f"recall@1 {self.recall_at_1:.3f} ({self.right} of {self.labelled} right), "
            f"precision {self.precision:.3f} ({self.wrong} wrong of {self.answered} answered), "
            f"honest no-match {self.honest} of {self.unlabelled}"
        )


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher(load_records().records)


@pytest.fixture(scope="module")
def answers(matcher: Matcher) -> list[str | None]:
    """The slug of each message's first confident match (None: no match)."""
    return [first_answer(matcher, entry["text"]) for entry in SAMPLE]


def first_answer(matcher: Matcher, text: str) -> str | None:
    """The first match ``diagnose match`` prints (it searches with its default limit, 5)."""
    matches = matcher.search(text, limit=5, nearest=3).matches
    return matches[0].slug if matches else None


def measure(answers: list[str | None], sample: list[dict[str, Any]] | None = None) -> Figures:
    """The figures of ``answers`` to ``sample`` (this file's sample by default)."""
    pairs = list(zip(sample or SAMPLE, answers, strict=True))
    labelled = [(e["expect"], got) for e, got in pairs if e["expect"]]
    unlabelled = [got for e, got in pairs if not e["expect"]]
    answered = [(e["expect"], got) for e, got in pairs if got]
    return Figures(
        labelled=len(labelled),
        right=sum(1 for want, got in labelled if got == want),
        unlabelled=len(unlabelled),
        honest=sum(1 for got in unlabelled if got is None),
        answered=len(answered),
        wrong=sum(1 for want, got in answered if got != want),
    )


def test_the_sample_is_large_and_mixed_enough_to_measure_by() -> None:
    assert len(SAMPLE) >= 150
    assert sum(1 for e in SAMPLE if e["expect"]) >= 50
    # Labelled against the whole shipped dataset, about a sixth are errors no record explains.
    assert sum(1 for e in SAMPLE if not e["expect"]) >= 20


def check_entry(entry: dict[str, Any]) -> None:
    """A sample entry: the thread's URL, the text as pasted, a family label, ``expect``."""
    assert set(entry) == {"url", "text", "library", "family", "expect"}
    assert re.fullmatch(r"https://[^\s/]+\.[^\s/]+/\S*", entry["url"])
    assert entry["text"].strip()
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", entry["family"])
    assert entry["library"].strip()
    assert entry["expect"] is None or isinstance(entry["expect"], str)


@pytest.mark.parametrize("entry", SAMPLE, ids=IDS)
def test_every_entry_has_a_thread_url_and_the_pasted_text(entry: dict[str, Any]) -> None:
    check_entry(entry)


def test_every_expected_record_is_shipped() -> None:
    shipped = {record.slug for record in load_records().records}
    assert {e["expect"] for e in SAMPLE if e["expect"]} <= shipped


def with_known_wrong(sample: list[dict[str, Any]], known: dict[str, str], ids: list[str]) -> list:
    """Each entry as a test parameter, a strict xfail where ``known`` says it is answered
    wrong (and why)."""
    params = []
    for index, entry in enumerate(sample):
        reason = known.get(entry["url"])
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(index, entry, marks=marks, id=ids[index]))
    return params


def check_answer(entry: dict[str, Any], got: str | None) -> None:
    """The first answer is the expected record or none; for an unexplained error, none."""
    if entry["expect"] is None:
        assert got is None, f"no shipped record explains {entry['url']}, yet {got} was matched"
    else:
        assert got in (entry["expect"], None), f"{entry['url']}: {got} instead of {entry['expect']}"


@pytest.mark.parametrize(("index", "entry"), with_known_wrong(SAMPLE, KNOWN_WRONG, IDS))
def test_no_message_gets_a_confident_wrong_answer(
    answers: list[str | None], index: int, entry: dict[str, Any]
) -> None:
    check_answer(entry, answers[index])


def test_the_right_record_ranks_first_for_nearly_every_labelled_message(
    answers: list[str | None],
) -> None:
    figures = measure(answers)
    print(f"\nreal sample of {len(SAMPLE)} messages: {figures}")
    assert figures.wrong <= len(KNOWN_WRONG), str(figures)
    assert figures.recall_at_1 >= RECALL_AT_1_FLOOR, str(figures)
