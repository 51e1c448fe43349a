"""The matcher ranks records for real pasted tracebacks, and says so honestly when none fits."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import pytest

from diagnose.matcher import NEAREST_FLOOR, Matcher


@dataclass
class Rec:
    """Any object with the upstream record keys works (duck typing)."""

    id: str
    slug: str
    errorMessage: str
    messagePattern: str | None
    errorClass: str | None = "RuntimeError"
    solutions: list[str] = field(default_factory=list)


OOM = Rec(
    "oom",
    "cuda-oom",
    "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)",
    r"CUDA out of memory\. Tried to allocate [\d.]+ [KMGT]iB",
    "OutOfMemoryError",
)
DEVICES = Rec(
    "dev",
    "same-device",
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
    r"Expected all tensors to be on the same device, but found at least two devices, "
    r"(?:cuda|cpu)(?::\d+)? and (?:cuda|cpu)(?::\d+)?",
)
MATMUL = Rec(
    "mm",
    "matmul-shapes",
    "mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)",
    r"mat1 and mat2 shapes cannot be multiplied \(\d+x\d+ and \d+x\d+\)",
)
RECORDS = [OOM, DEVICES, MATMUL]


def test_pattern_match_ranks_first_with_score_and_reason():
    m = Matcher(RECORDS).match(
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    )
    assert m[0].record is MATMUL
    assert m[0].kind == "pattern" and m[0].score == 1.0
    assert m[0].reason.startswith("pattern matched the final line `RuntimeError: mat1")
    assert "same error class RuntimeError" in m[0].reason


def test_similar_text_matches_without_a_pattern_hit_and_scores_below_patterns():
    # wording drifted between versions: no pattern matches, the text is still close
    m = Matcher(RECORDS).match(
        "RuntimeError: Expected all tensors to be on the same device, but got two devices, cuda:1 and cpu"
    )
    assert m[0].record is DEVICES and m[0].kind == "similar"
    assert 0 < m[0].score < 0.9
    assert m[0].reason.startswith("similar text (0.")


def test_error_class_breaks_ties_between_equally_similar_records():
    a = Rec("a", "a", "loss scale too small for step", None, "ValueError")
    b = Rec("b", "b", "loss scale too small for step", None, "RuntimeError")
    m = Matcher([a, b]).search("RuntimeError: loss scale too small for step")
    assert [x.record.id for x in m.matches] == ["b", "a"]


def test_the_error_class_alone_never_turns_a_near_miss_into_a_match():
    # real: ssd.pytorch#447. The text shares "CUDA error ... memory" with the illegal-access
    # message, no more than with the out-of-memory one; only the class (RuntimeError) is
    # the same, and a class is not evidence of which error it is.
    access = Rec(
        "ima",
        "illegal-access",
        "CUDA error: an illegal memory access was encountered",
        None,
        "RuntimeError",
    )
    matcher = Matcher([access])
    result = matcher.search("RuntimeError: CUDA error: out of memory")
    assert result.matches == []
    assert [n.record for n in result.nearest] == [access]
    assert result.nearest[0].score < matcher.cutoff


def test_a_message_that_is_only_a_quoted_name_is_no_similar_match():
    """``KeyError: 'epoch_loop'`` folds to ``KeyError: <q>``: only the class is left."""
    exists = Rec("ex", "exists", "\"attribute 'mask' already exists\"", None, "KeyError")
    result = Matcher([exists]).search("KeyError: 'epoch_loop.batch_loop.optim_progress'")
    assert result.matches == []


def test_similar_text_naming_another_status_code_is_no_match():
    invalid = Rec(
        "inv",
        "cublas-invalid-value",
        "CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasSgemm( handle, opa)`",
        None,
    )
    text = (
        "RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasCreate(handle)`"
    )
    result = Matcher([invalid]).search(text)
    assert result.matches == [] and [n.record for n in result.nearest] == [invalid]
    same = text.replace("INTERNAL_ERROR", "INVALID_VALUE")
    assert Matcher([invalid]).match(same)[0].record is invalid


def test_a_warning_beside_an_error_no_record_explains_is_not_the_answer():
    deprecated = Rec(
        "dep",
        "gradscaler-deprecated",
        "torch.cuda.amp.GradScaler(args...) is deprecated",
        r"torch\.cuda\.amp\.GradScaler\(args\.\.\.\) is deprecated",
        "FutureWarning",
    )
    warning = (
        "train.py:12: FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated. "
        "Please use `torch.amp.GradScaler('cuda', args...)` instead.\n"
    )
    error = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in <module>\n'
        "    x, y = batch\n"
        "ValueError: too many values to unpack (expected 2)\n"
    )
    matcher = Matcher([deprecated])
    result = matcher.search(warning + error)
    assert result.matches == [] and result.nearest[0].record is deprecated
    assert "a warning printed beside an error" in result.nearest[0].reason
    assert matcher.match(warning)[0].record is deprecated  # the warning alone: its record


def test_the_error_class_still_orders_records_the_text_alone_makes_matches():
    a = Rec("a", "a", "loss scale too small for step 3", None, "ValueError")
    b = Rec("b", "b", "loss scale too small for step 3", None, "RuntimeError")
    m = Matcher([a, b]).search("RuntimeError: loss scale too small for the step 3")
    assert [x.record.id for x in m.matches] == ["b", "a"]
    assert m.matches[0].score > m.matches[1].score


def test_no_match_is_an_honest_answer_with_the_near_misses_apart():
    matcher = Matcher(RECORDS)
    query = "RuntimeError: tensors are on different devices, cuda:0 and cpu"
    assert matcher.match(query) == []
    result = matcher.search(query, nearest=2)
    assert not result.matched and result.matches == []
    assert [n.record for n in result.nearest] == [DEVICES]
    assert all(NEAREST_FLOOR <= n.score < matcher.cutoff for n in result.nearest)


def test_records_far_below_the_threshold_are_not_offered_as_near_misses():
    result = Matcher(RECORDS).search("KeyError: 'input_ids' not found in batch dictionary")
    assert result.matches == [] and result.nearest == []


def test_reason_quotes_the_line_where_the_pattern_matched():
    text = """\
RuntimeError: Error(s) in loading state_dict for Net:
\tmissing stuff first
\tmat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)
"""
    (m,) = Matcher(RECORDS).match(text)
    assert m.reason.startswith(
        "pattern matched the final line `mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)`"
    )


def test_reason_quotes_from_the_match_on_when_it_starts_far_into_a_long_line():
    text = (
        "RuntimeError: something else went wrong in step 3 of 7 while " * 2
        + "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    )
    (m,) = Matcher(RECORDS).match(text)
    assert "`...mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)`" in m.reason


def test_reason_names_a_message_read_from_the_raise_in_the_last_frame():
    text = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 9, in linear
    raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
Thank you in advance.
"""
    (m,) = Matcher(RECORDS).match(text)
    assert m.kind == "pattern" and m.role == "raised"
    assert m.reason.startswith("pattern matched the message raised in the last frame `Runtime")


def test_markdown_backticks_inside_a_pasted_message_do_not_stop_a_pattern():
    text = "RuntimeError: `mat1 and mat2` shapes cannot be multiplied (2x3 and 4x5)"
    (m,) = Matcher(RECORDS).match(text)
    assert m.record is MATMUL and m.kind == "pattern"


def test_a_pattern_that_does_not_compile_is_skipped_and_reported():
    bad = Rec("bad", "bad", "CUDA out of memory", r"CUDA out of memory(")
    matcher = Matcher([bad, OOM])
    m = matcher.match("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB")
    assert m[0].record is OOM and m[0].kind == "pattern"
    assert [(r.id, why.split(":")[0]) for r, why in matcher.problems] == [
        ("bad", "pattern does not compile")
    ]


def test_catastrophic_backtracking_pattern_cannot_hang_a_match():
    evil = Rec("evil", "evil", "aaaa", r"(a+)+$", None)
    evil2 = Rec("evil2", "evil2", "aaaa", r"(\w+\s?)+$", None)
    matcher = Matcher([evil, evil2, OOM])
    line = "RuntimeError: " + "a" * 5000 + "!"
    start = time.perf_counter()
    matcher.search(line)
    assert (
        time.perf_counter() - start < 10.0
    )  # a hang guard: unbounded backtracking here would take years


def test_many_records_still_find_the_right_one():
    filler = [
        Rec(
            f"f{i}",
            f"f{i}",
            f"synthetic failure number {i} in stage alpha{i}",
            rf"synthetic failure number {i} in stage alpha{i}\b",
        )
        for i in range(3000)
    ]
    matcher = Matcher([*filler, *RECORDS])
    m = matcher.match("synthetic failure number 1234 in stage alpha1234")
    assert m[0].record.id == "f1234" and m[0].kind == "pattern"
    m = matcher.match(
        "RuntimeError: Expected all tensors to be on the same device, but found "
        "at least two devices, cpu and cuda:7!"
    )
    assert m[0].record is DEVICES


@pytest.mark.parametrize("limit", [1, 2])
def test_limit_is_respected(limit):
    query = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    assert len(Matcher([*RECORDS, MATMUL]).match(query, limit=limit)) <= limit


def test_a_quoted_name_the_records_pattern_insists_on_must_be_in_the_text():
    # normalised, every "'X' object has no attribute 'y'" reads the same; the record's own
    # pattern names the class, and an AttributeError of another class is another error
    config = Rec(
        "cfg",
        "configdict-has-no-attribute",
        "AttributeError: 'ConfigDict' object has no attribute 'test_dataloader'",
        r"'ConfigDict' object has no attribute '\w+'",
        "AttributeError",
    )
    matcher = Matcher([config, OOM])
    other = "AttributeError: 'NoneType' object has no attribute 'peft_config'"
    assert matcher.search(other).matches == []
    same = "AttributeError: 'ConfigDict' object has no attribute 'train_cfg'"
    assert [m.slug for m in matcher.search(same).matches] == ["configdict-has-no-attribute"]
