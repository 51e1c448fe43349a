"""Real pastes of the error families whose records were added last, matched as ``diagnose match``.

``records_sample.json`` holds, for each family added with the records for DDP's
``find_unused_parameters`` hint, a second ``set_start_method``, ``EOFError: Ran out of input``,
unpicklable DataLoader worker arguments, bf16 autocast on GPUs below compute capability 8.0,
weights used outside their ZeRO-3 / FSDP wrapper, xformers finding no attention kernel,
compiled extensions importing into another torch (undefined c10/ATen symbols), torchvision's
operators missing from another torch (both wordings), and
Lightning 1.x's ``ModelCheckpoint(monitor=...) not found in the returned metrics``, the pastes
that searches of public issue threads returned for that message, in order, verbatim as the
search excerpt had them (a paste cut off before its error line was skipped; one whose wording was
garbled by a terminal panel drawn over it was skipped too). Each shows the family in another
shape: other releases' wordings (Python 3.7's ``can't pickle _thread.lock objects``, torch 1.8's
warning without "in the forward pass"), warnings broken over lines, log lines around the error,
Windows paths, a traceback's tail, and Windows DataLoader pastes where the parent's pickling
error and the spawned child's ``EOFError: Ran out of input`` stand together, in either order,
one of them headerless or printed after a shell prompt (the parent's error is the answer).
The records were written before these threads were read; the last four led to the reading of
spawned children's echoes in ``diagnose/matching/logtext.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from diagnose.matcher import Matcher
from diagnose.records import load_records
from tests.matching.test_real_sample import check_entry, first_answer, measure

SAMPLE_FILE = Path(__file__).with_name("records_sample.json")
SAMPLE: list[dict[str, Any]] = json.loads(SAMPLE_FILE.read_text(encoding="utf-8"))
IDS = [f"{i:03d}-{entry['family']}" for i, entry in enumerate(SAMPLE)]


@pytest.fixture(scope="module")
def answers() -> list[str | None]:
    matcher = Matcher(load_records().records)
    return [first_answer(matcher, entry["text"]) for entry in SAMPLE]


@pytest.mark.parametrize("entry", SAMPLE, ids=IDS)
def test_every_entry_has_a_thread_url_and_the_pasted_text(entry: dict[str, Any]) -> None:
    check_entry(entry)


def test_every_thread_is_new_to_the_other_samples() -> None:
    others = ("real_sample.json", "heldout_sample.json", "heldout2_sample.json")
    seen = {
        e["url"]
        for name in others
        for e in json.loads(SAMPLE_FILE.with_name(name).read_text(encoding="utf-8"))
    }
    assert not seen & {e["url"] for e in SAMPLE}


@pytest.mark.parametrize("index", range(len(SAMPLE)), ids=IDS)
def test_each_paste_is_answered_with_its_record(index: int, answers: list[str | None]) -> None:
    assert answers[index] == SAMPLE[index]["expect"]


def test_recall_and_precision_are_whole(answers: list[str | None]) -> None:
    figures = measure(answers, SAMPLE)
    assert figures.recall_at_1 == 1.0 and figures.precision == 1.0, str(figures)
