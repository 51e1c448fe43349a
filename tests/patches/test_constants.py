"""representable-constant replaces a "minus infinity" its dtype cannot hold by finfo().min."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch


def test_a_negative_literal_past_float16_becomes_its_lowest_value(tmp_path):
    result = patch(tmp_path, "representable-constant", """
        import torch
        bias = (1.0 - mask) * -1e9
    """, line=2, dtype="float16")
    assert diff_body(result) == ["-bias = (1.0 - mask) * -1e9",
                                 "+bias = (1.0 - mask) * torch.finfo(torch.float16).min"]


def test_numbers_the_dtype_can_hold_are_left_alone(tmp_path):
    result = patch(tmp_path, "representable-constant", """
        import torch
        scores = scores.masked_fill(mask, -1e4) * 0.5 - 1e9
    """, line=2, dtype="float32")
    assert result.diff is None
    assert "no number beyond float32's range in the script" in result.note


def test_a_positive_scale_gets_a_note_not_a_guess(tmp_path):
    result = patch(tmp_path, "representable-constant", """
        import torch
        loss = loss * 1e39
    """, line=2, dtype="float32")
    assert result.diff is None
    assert "positive scale" in result.note
