"""Patches are made on ``\\n`` text; the script written back keeps the endings it had."""

from __future__ import annotations

from diagnose.patches.endings import decode_source, restore_endings


def test_the_patchers_see_universal_newlines():
    assert decode_source(b"a = 1\r\nb = 2\rc = 3\n") == "a = 1\nb = 2\nc = 3\n"


def test_crlf_file_keeps_crlf_on_changed_and_added_lines():
    original = "a = 1\r\nb = 2\r\nc = 3\r\n"
    patched = "a = 1\nb = 20\nnew = 0\nc = 3\n"
    assert restore_endings(original, patched) == "a = 1\r\nb = 20\r\nnew = 0\r\nc = 3\r\n"


def test_mixed_endings_stay_with_their_lines():
    original = "a = 1\r\nb = 2\nc = 3\r\nd = 4\n"
    patched = "a = 1\nb = 2\nc = 3\nd = 40\n"
    assert restore_endings(original, patched) == "a = 1\r\nb = 2\nc = 3\r\nd = 40\n"


def test_an_added_line_takes_the_most_common_ending():
    original = "a = 1\r\nb = 2\r\nc = 3\n"
    patched = "a = 1\nadded = 0\nb = 2\nc = 3\n"
    assert restore_endings(original, patched) == "a = 1\r\nadded = 0\r\nb = 2\r\nc = 3\n"


def test_lone_carriage_returns_are_kept():
    original = "a = 1\rb = 2\r"
    assert restore_endings(original, "a = 1\nb = 3\n") == "a = 1\rb = 3\r"


def test_a_last_line_without_ending_stays_without_one():
    original = "a = 1\r\nb = 2"
    assert restore_endings(original, "a = 1\nb = 3") == "a = 1\r\nb = 3"


def test_lines_added_after_an_unterminated_last_line_get_the_files_ending():
    original = "a = 1\r\nb = 2"
    assert restore_endings(original, "a = 1\nb = 2\nc = 3\n") == "a = 1\r\nb = 2\r\nc = 3\r\n"


def test_repeated_lines_are_matched_in_order():
    original = "x\r\ny\r\nx\r\ny\n"
    patched = "x\ny\nnew\nx\ny\n"
    assert restore_endings(original, patched) == "x\r\ny\r\nnew\r\nx\r\ny\n"


def test_a_file_with_only_newlines_is_unchanged():
    assert restore_endings("a\nb\n", "a\nc\nb\n") == "a\nc\nb\n"


def test_form_feeds_and_other_separators_are_not_line_endings():
    original = "a = 1\r\n\x0c\r\nb = 2\u2028# c\r\n"
    patched = "a = 1\n\x0c\nb = 3\u2028# c\n"
    assert restore_endings(original, patched) == "a = 1\r\n\x0c\r\nb = 3\u2028# c\r\n"
