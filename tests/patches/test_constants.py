"""representable-constant replaces a "minus infinity" its dtype cannot hold by finfo().min;
representable-eps replaces an eps the dtype rounds to 0 by one it holds."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch


def test_a_negative_literal_past_float16_becomes_its_lowest_value(tmp_path):
    result = patch(
        tmp_path,
        "representable-constant",
        """
        import torch
        bias = (1.0 - mask) * -1e9
    """,
        line=2,
        dtype="float16",
    )
    assert diff_body(result) == [
        "-bias = (1.0 - mask) * -1e9",
        "+bias = (1.0 - mask) * torch.finfo(torch.float16).min",
    ]


def test_numbers_the_dtype_can_hold_are_left_alone(tmp_path):
    result = patch(
        tmp_path,
        "representable-constant",
        """
        import torch
        scores = scores.masked_fill(mask, -1e4) * 0.5 - 1e9
    """,
        line=2,
        dtype="float32",
    )
    assert result.diff is None
    assert "no number beyond float32's range in the script" in result.note


def test_a_positive_scale_gets_a_note_not_a_guess(tmp_path):
    result = patch(
        tmp_path,
        "representable-constant",
        """
        import torch
        loss = loss * 1e39
    """,
        line=2,
        dtype="float32",
    )
    assert result.diff is None
    assert "positive scale" in result.note


def _lost_eps(line: int, numbers: list[float], source: tuple | None = None) -> dict:
    """An event: a float16 division whose divisor held 0, made by an add given ``numbers``
    (at ``source``, a (file, line) pair, when known)."""
    made_by = {"input": 1, "op": "add", "numbers": numbers}
    if source is not None:
        made_by["location"] = {"file": str(source[0]), "line": source[1]}
    return {
        "op": "div",
        "op_input_sources": [made_by],
        "op_inputs": [
            {"name": "input[0]", "dtype": "float16", "zeros": 0},
            {"name": "input[1]", "dtype": "float16", "zeros": 4},
        ],
    }


def test_an_eps_float16_rounds_to_zero_becomes_one_it_holds(tmp_path):
    result = patch(
        tmp_path,
        "representable-eps",
        """
        import torch
        z = (x - x.mean()) / (x.std() + 1e-8) * 1e-8
    """,
        line=2,
        dtype="float16",
        event_fields=_lost_eps(2, [1e-8]),
    )
    assert diff_body(result) == [
        "-z = (x - x.mean()) / (x.std() + 1e-8) * 1e-8",
        "+z = (x - x.mean()) / (x.std() + 1e-4) * 1e-4",
    ]


def test_the_eps_is_patched_on_the_line_that_added_it(tmp_path):
    script_lines = """
        import torch
        denom = x.std() + 1e-12
        z = x / denom
    """
    result = patch(
        tmp_path,
        "representable-eps",
        script_lines,
        line=3,
        dtype="float16",
        event_fields=_lost_eps(3, [1e-12], source=(tmp_path / "train.py", 2)),
    )
    assert diff_body(result) == ["-denom = x.std() + 1e-12", "+denom = x.std() + 1e-4"]


def test_an_eps_held_in_a_variable_gets_a_note(tmp_path):
    result = patch(
        tmp_path,
        "representable-eps",
        """
        import torch
        z = x / (x.std() + eps)
    """,
        line=2,
        dtype="float16",
        event_fields=_lost_eps(2, [1e-8]),
    )
    assert result.diff is None
    assert "no literal 1.0e-8 on line 2" in result.note and "1e-4" in result.note
