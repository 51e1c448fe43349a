"""Comments on the lines a patch changes say what the code now does."""

from __future__ import annotations

from diagnose.patches.comments import refresh_comments

WORDS = {"fp16": "bf16", "float16": "bfloat16"}


def test_a_changed_lines_comment_names_the_new_dtype():
    old = "model = net.half()  # fp16 everywhere\nx = 1  # fp16 too\n"
    new = "model = net.bfloat16()  # fp16 everywhere\nx = 1  # fp16 too\n"
    assert refresh_comments(old, new, WORDS) == (
        "model = net.bfloat16()  # bf16 everywhere\nx = 1  # fp16 too\n"
    )


def test_only_whole_words_in_comments_change_never_strings_or_code():
    old = 'a = x.half()  # FP16, not fp16x\nb = "fp16"\n'
    new = 'a = x.bfloat16()  # FP16, not fp16x\nb = "fp16"  # float16 string\n'
    assert refresh_comments(old, new, WORDS) == (
        'a = x.bfloat16()  # bf16, not fp16x\nb = "fp16"  # bfloat16 string\n'
    )


def test_source_that_does_not_tokenize_is_left_as_it_is():
    new = "x = (\n  # fp16\n"
    assert refresh_comments("", new, WORDS) == new
