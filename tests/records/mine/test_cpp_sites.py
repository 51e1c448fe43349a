"""C++ sites: torch's check macros read by the tolerant scanner, with the class torch raises,
multi-line calls joined, comments, strings and macro definitions told apart; and patterns
that find the messages torch itself prints."""

from __future__ import annotations

import re

import pytest

from diagnose.records.mine.cpp_lexer import Source
from diagnose.records.mine.cpp_sites import cpp_sites
from diagnose.records.mine.pattern import made_and_tested
from diagnose.records.mine.pieces import literal_text
from tests.records.mine.conftest import CSRC, at_line, records_of

PATH = "csrc/checks.cpp"
TEXT = (CSRC / "checks.cpp").read_text()
LINES = TEXT.split("\n")
RECORDS = records_of(CSRC.parent, include=("csrc/*",), kinds=frozenset({"cpp"}))


def _line_of(snippet: str) -> int:
    return next(i for i, line in enumerate(LINES, 1) if snippet in line)


def _record(snippet: str) -> dict:
    return at_line(RECORDS, PATH, _line_of(snippet))


@pytest.mark.parametrize(
    ("snippet", "error_class", "pattern"),
    [
        ('TORCH_CHECK(self.dim() == 2, "self', "RuntimeError", "self must be a matrix"),
        (
            "TORCH_CHECK_INDEX(",
            "IndexError",
            "index .*? is out of bounds for dimension .*? with size",
        ),
        ("TORCH_CHECK_VALUE(", "ValueError", "dim must be non-negative, got"),
        ("TORCH_CHECK_TYPE(", "TypeError", "expected a floating point tensor, got"),
        ("TORCH_CHECK_NOT_IMPLEMENTED(", "NotImplementedError", "select is not implemented for"),
        ("AT_ERROR(", "RuntimeError", r'Unsupported layout: .*? \(expected "strided"\)'),
        ("C10_THROW_ERROR(", "ValueError", "bad reduction: .*? is not valid"),
        (
            "TORCH_CHECK_WITH(",
            "torch.OutOfMemoryError",
            r"CUDA out of memory\. Tried to allocate .*? \(GPU .*?; .*? total\)",
        ),
        (
            "TORCH_WARN_ONCE(",
            "UserWarning",
            r"select with a negative index is deprecated; use .*?\.narrow\(.*?, \.\.\.\) instead",
        ),
        ("throw std::runtime_error", "RuntimeError", "NCCL error in: .*?, unhandled system error"),
    ],
)
def test_each_macro_gives_its_class_and_pattern(snippet, error_class, pattern):
    record = _record(snippet)
    assert record["errorClass"] == error_class
    assert record["messagePattern"] == pattern


def test_multi_line_calls_join_their_pieces_and_end_at_the_closing_paren():
    record = _record("TORCH_CHECK_INDEX(")
    start = _line_of("TORCH_CHECK_INDEX(")
    assert record["lineNumber"] == start
    assert record["sourceCodeEnd"] >= start + 3  # the call's last line is inside the snippet


def test_a_check_without_message_gets_torchs_default_with_the_condition_stringized():
    record = _record("TORCH_CHECK(self.numel() > 0 &&")
    assert record["errorMessage"] == (
        "Expected self.numel() > 0 && self.dim() < 64 to be true, but got false.  (Could this "
        "error message be improved?  If so, please report an enhancement request to PyTorch.)"
    )


def test_an_internal_assert_names_the_file_and_keeps_the_callers_text():
    record = _record("TORCH_INTERNAL_ASSERT(")
    seen = (
        'self.defined() INTERNAL ASSERT FAILED at "/pytorch/csrc/checks.cpp":32, please '
        "report a bug to PyTorch. select got an undefined tensor"
    )
    assert re.search(record["messagePattern"], seen)


def test_raw_strings_escapes_and_prefixes_are_decoded():
    record = _record('R"(raw')
    assert record["errorMessage"].startswith('raw "quoted" text \\n stays; wide')


def test_comments_strings_and_macro_names_are_not_sites_but_macro_bodies_are():
    lines = {r["lineNumber"] for r in RECORDS}
    for snippet in (
        "a comment is not a site",
        "nor is a block comment",
        "nor a string",
        "#define TORCH_CHECK",
    ):
        assert _line_of(snippet) not in lines, snippet
    inside_define = _record("  TORCH_CHECK(    ")
    assert inside_define["messagePattern"].startswith("mat1 and mat2 shapes cannot be multiplied")


def test_a_message_in_a_variable_is_not_a_pattern():
    assert _line_of("check_message.empty()") not in {r["lineNumber"] for r in RECORDS}


def test_unbalanced_and_unterminated_text_is_tolerated():
    broken = 'void f() {\n  TORCH_CHECK(x, "never closed\n  TORCH_CHECK(y, "fine ", z);\n'
    sites = cpp_sites(Source(broken), "broken.cpp")
    assert all(s.line >= 1 for s in sites)


def test_the_mined_pattern_finds_the_message_torch_prints():
    """mm's check, as ATen spells it (fixture copy): the pattern finds torch's real message."""
    torch = pytest.importorskip("torch")
    record = _record("  TORCH_CHECK(    ")
    with pytest.raises(RuntimeError) as mm_error:
        torch.mm(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(RuntimeError) as linear_error:
        torch.nn.functional.linear(torch.ones(7, 3), torch.ones(5, 4))
    for seen in (str(mm_error.value), str(linear_error.value)):
        assert re.search(record["messagePattern"], seen), seen
    with pytest.raises(IndexError) as index_error:
        torch.ones(3)[5]
    index_record = _record("TORCH_CHECK_INDEX(")
    assert re.search(index_record["messagePattern"], str(index_error.value))
    assert type(index_error.value).__name__ == index_record["errorClass"]


def test_every_mined_cpp_pattern_passes_its_self_test():
    tested = [
        made_and_tested(s.pieces)
        for s in cpp_sites(Source(TEXT), PATH)
        if s.pieces and literal_text(s.pieces)
    ]
    assert len(tested) == len(RECORDS) == 14
    assert all(t.failure is None for t in tested)
