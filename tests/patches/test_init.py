"""fix-initialization resets a huge init scale."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch


def test_huge_std_keyword(tmp_path):
    result = patch(
        tmp_path,
        "fix-initialization",
        """
        from torch import nn
        nn.init.normal_(layer.weight, mean=0.0, std=1e20)
    """,
    )
    assert diff_body(result) == [
        "-nn.init.normal_(layer.weight, mean=0.0, std=1e20)",
        "+nn.init.normal_(layer.weight, mean=0.0, std=1.0)",
    ]
    assert result.note.startswith("std=1e20 -> 1.0")


def test_several_candidates_are_named_not_guessed(tmp_path):
    result = patch(tmp_path, "fix-initialization", "A = 1e9\nB = 5e12\n")
    assert result.diff is None
    assert "several huge constants (A = 1e9, B = 5e12)" in result.note
