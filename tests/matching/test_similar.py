"""Similar-text ranking: a fragment of a record's message finds it, a mere overlap does not."""

from __future__ import annotations

from diagnose.matcher import DEFAULT_THRESHOLD
from diagnose.matching.similar import SimilarityIndex

INVALID_GRADIENT = (
    "Function BadBackward returned an invalid gradient at index 0 - got [1] but expected "
    "shape compatible with [3]"
)


def _score(index: SimilarityIndex, query: str) -> float:
    return dict(index.nearest(query, 5)).get(0, 0.0)


def test_a_fragment_of_the_message_scores_as_a_match():
    index = SimilarityIndex([INVALID_GRADIENT])
    assert _score(index, "returned an invalid gradient at index 0") >= DEFAULT_THRESHOLD


def test_sharing_some_words_is_not_enough_to_reach_the_threshold():
    # real: schelotto/Wasserstein-AutoEncoders#2, an old type-mismatch wording cut off in the
    # paste; it shares "invalid gradient index" with the record, but "expect" is not in it
    index = SimilarityIndex([INVALID_GRADIENT])
    score = _score(index, "invalid gradient at index 0 - expect")
    assert 0.5 <= score < DEFAULT_THRESHOLD


def test_an_overlap_still_counts_as_a_near_miss():
    index = SimilarityIndex(["CUDA error: an illegal memory access was encountered"])
    assert 0.5 <= _score(index, "CUDA error: out of memory") < DEFAULT_THRESHOLD


def test_a_paste_cut_inside_its_last_word_is_still_a_fragment():
    # real: Peterande/D-FINE#118, an older watchdog wording pasted up to "millisecond"
    index = SimilarityIndex(
        [
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 "
            "milliseconds before timing out."
        ]
    )
    query = (
        "WorkNCCL(SeqNum=5125, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1807734 millisecond"
    )
    assert _score(index, query) >= DEFAULT_THRESHOLD


def test_a_cut_last_word_must_continue_the_words_before_it():
    # "expect" begins "expected", but in the record "index 0 -" goes on with "got"
    index = SimilarityIndex([INVALID_GRADIENT])
    assert _score(index, "invalid gradient at index 0 - expect") < DEFAULT_THRESHOLD
