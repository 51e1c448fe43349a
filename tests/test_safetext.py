"""Safe text: nothing a terminal acts on survives, the words do, and JSON keeps the data."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.safetext import json_text, one_line, paste_safe, safe, strip_escapes
from tests.untrusted import assert_no_controls, examples, hostile_text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2Jafter", "after"),  # OSC 52 + clear screen
        ("\x1b[1mExpected\x1b[0m a tensor", "Expected a tensor"),  # torch's bold, no [1m left
        ("\x1b[38;5;196mred\x1b[m", "red"),
        ("a\x1bcb", "ab"),  # terminal reset
        ("a\x1b#8b", "ab"),  # screen alignment test
        ("a\x1b(0b", "ab"),  # line-drawing charset
        ("a\x1b 7b\x1b%Gc", "abc"),  # other nF sequences
        ("a\x1b7b\x1b8c\x1b=d", "abcd"),  # Fp sequences
        ("a\x9b2Jb", "ab"),  # 8-bit CSI
        ("a\x9d0;title\x07b\x9d2;t\x9cc", "abc"),  # 8-bit OSC, BEL or 8-bit ST
        ("a\x1b]8;;file:///etc/passwd\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),  # OSC 8 hyperlink
        (
            "a\x1bP+q544e\x1b\\b\x1b_apc\x1b\\c\x1b^pm\x1b\\d\x1bXsos\x1b\\e",
            "abcde",
        ),  # DCS APC PM SOS
        ("a\x90dcs\x9cb", "ab"),  # 8-bit DCS
    ],
)
def test_escape_sequences_are_removed_whole(raw, shown):
    assert safe(raw) == shown
    assert strip_escapes(raw) == shown


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("cannot\x08\x08 be\x00 multiplied", "cannot\\x08\\x08 be\\x00 multiplied"),
        ("bell\x07 del\x7f nel\x85", "bell\\x07 del\\x7f nel\\x85"),
        ("lone \x1b", "lone \\x1b"),
        ("cut \x9b", "cut \\x9b"),
        ("\u202eevil\u202c \u2066iso\u2069", "\\u202eevil\\u202c \\u2066iso\\u2069"),  # bidi
        ("name\udcff.py", "name\\udcff.py"),  # an undecodable byte of a file name
    ],
)
def test_other_controls_are_shown_as_escapes(raw, shown):
    assert safe(raw) == shown


def test_a_string_introducer_without_its_terminator_loses_only_the_introducer():
    assert safe("\x1b]52;c;payload") == "52;c;payload"
    assert safe("\x1b]0;t\nnext line") == "0;t\nnext line"


def test_newlines_and_tabs_stay_and_carriage_returns_cannot_overwrite():
    assert safe("a\tb\nc") == "a\tb\nc"
    assert safe("line\r\nnext\rover") == "line\nnext\nover"
    assert one_line("a\nb\tc\r\nd") == "a b c d"


def test_markup_is_left_to_the_widgets_and_none_is_empty():
    assert safe("[@click=app.quit]x[/]") == "[@click=app.quit]x[/]"
    assert safe(None) == ""
    assert safe(3) == "3"


def test_many_introducers_take_linear_time():
    # each attempt stops at the next control character: no quadratic rescans
    for text in ("\x1b]" * 100_000, "\x9d" * 100_000, "\x1b[" + "0" * 200_000, "\x1bP" * 100_000):
        assert_no_controls(safe(text))


@examples(200)
@given(hostile_text)
def test_no_control_reaches_the_terminal(text):
    out = safe(text)
    assert_no_controls(out)
    assert "\n" not in one_line(text) and "\t" not in one_line(text)
    assert safe(out) == out  # shown text is already safe: nothing changes twice


@examples(200)
@given(st.one_of(hostile_text, st.text(st.characters(codec=None, exclude_categories=[]))))
def test_json_text_escapes_raw_controls_and_reads_back_the_same(text):
    dumped = json_text(json.dumps({"k": text}, ensure_ascii=False))
    assert_no_controls(dumped)
    assert json.loads(dumped) == {"k": text}


def test_json_text_escapes_c1_del_bidi_and_surrogates():
    dumped = json_text(json.dumps(["\x85\x9b\x7f\u202e\ud800"], ensure_ascii=False))
    assert dumped == '["\\u0085\\u009b\\u007f\\u202e\\ud800"]'


# --- text for the clipboard ---------------------------------------------------------------

PASTE_ATTACKS = (
    "\x1b[201~",  # ends a shell's bracketed paste: what follows runs as typed
    "\x9b201~",  # the same with the 8-bit CSI
    "\x1b[200~",
    "\r",  # a line that returns to its start hides what came before it
    "\r\n",
    "\u202e",  # right-to-left override: the line reads backwards
    "\u2066",
    "\u2069",
    "\u200f",  # right-to-left mark
    "\u061c",
    "\u200b",  # zero width space
    "\u2028",  # line separator
    "\ufeff",
    "\x00",
    "\x7f",
    "\x08",
)
paste_text = st.lists(
    st.one_of(st.text(max_size=6), st.sampled_from(PASTE_ATTACKS), hostile_text), max_size=8
).map("".join)
_UNPASTEABLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069\ufeff\ud800-\udfff]"
)


@given(text=paste_text)
@examples(300)
def test_clipboard_text_can_neither_end_a_bracketed_paste_nor_hide_or_reorder_a_line(text):
    out = paste_safe(text)
    bad = _UNPASTEABLE.search(out)
    assert bad is None, (bad.group(), out)
    assert "\x1b" not in out and "\x9b" not in out and "\r" not in out  # no paste terminator
    out.encode("utf-8")


def test_a_patch_that_ends_the_paste_and_runs_a_command_pastes_as_plain_text():
    patch = "-lr = 1.0\n+lr = 1e-3\x1b[201~\rrm -rf ~\n\u202eevil\u202c"
    out = paste_safe(patch)
    assert out == "-lr = 1.0\n+lr = 1e-3\nrm -rf ~\n\\u202eevil\\u202c"
    assert paste_safe("+x = 1\n\t+y = 2\n") == "+x = 1\n\t+y = 2\n"  # a real patch is unchanged
