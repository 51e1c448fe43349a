"""lower-learning-rate divides the lr by 10 where the script sets it, or names the flag."""

from __future__ import annotations

from tests.patches.helpers import diff_body, patch


def test_literal_in_the_optimizer_call(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        import torch
        opt = torch.optim.Adam(net.parameters(), lr=3e-2, betas=(0.9, 0.99))  # tuned
    """,
    )
    assert diff_body(result) == [
        "-opt = torch.optim.Adam(net.parameters(), lr=3e-2, betas=(0.9, 0.99))  # tuned",
        "+opt = torch.optim.Adam(net.parameters(), lr=0.003, betas=(0.9, 0.99))  # tuned",
    ]
    assert result.note == "lr 0.03 -> 0.003 in the optimizer call"
    assert result.diff.startswith("--- a/train.py\n+++ b/train.py\n@@ -1,2 +1,2 @@\n")


def test_positional_lr(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        from torch import optim
        opt = optim.SGD(params, 1.5)
    """,
    )
    assert diff_body(result) == ["-opt = optim.SGD(params, 1.5)", "+opt = optim.SGD(params, 0.15)"]


def test_module_level_constant(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        import torch

        LR = 5e-1  # from the paper
        opt = torch.optim.RMSprop(model.parameters(), lr=LR)
    """,
    )
    assert diff_body(result) == ["-LR = 5e-1  # from the paper", "+LR = 0.05  # from the paper"]
    assert result.note == "LR = 0.5 -> 0.05"


def test_argparse_default_when_the_flag_was_not_given(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        import argparse, torch
        p = argparse.ArgumentParser()
        p.add_argument("--learning-rate", type=float, default=1.0, help="step size")
        args = p.parse_args()
        opt = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    """,
        config={"args": {"learning_rate": 1.0}, "args_given": {}},
    )
    assert diff_body(result) == [
        '-p.add_argument("--learning-rate", type=float, default=1.0, help="step size")',
        '+p.add_argument("--learning-rate", type=float, default=0.1, help="step size")',
    ]


def test_flag_given_on_the_command_line_is_not_edited(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        import argparse, torch
        p = argparse.ArgumentParser()
        p.add_argument("--lr", type=float, default=0.01)
        args = p.parse_args()
        opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    """,
        config={"args": {"lr": 2.0}, "args_given": {"lr": "--lr"}, "lr": 2.0},
    )
    assert result.diff is None and result.new_source is None
    # 2.0 is 200x the script's own default: back to that default, not a tenfold cut
    assert result.note.startswith("lr comes from the --lr flag: run with --lr 0.01 instead. ")
    assert "200x the usual 0.01 (the script's default of --lr)" in result.note


def test_default_lr_of_the_optimizer_gets_written(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        import torch
        opt = torch.optim.Adagrad(model.parameters())
    """,
    )
    assert diff_body(result) == [
        "-opt = torch.optim.Adagrad(model.parameters())",
        "+opt = torch.optim.Adagrad(model.parameters(), lr=0.001)",
    ]


def test_computed_lr_gets_a_note(tmp_path):
    result = patch(
        tmp_path,
        "lower-learning-rate",
        """
        import torch
        opt = torch.optim.SGD(model.parameters(), lr=base * scale)
    """,
    )
    assert result.diff is None
    assert result.note == (
        "no automatic patch: lr is computed (`base * scale`): divide it by 10 where it is computed"
    )


def test_no_optimizer(tmp_path):
    result = patch(tmp_path, "lower-learning-rate", "x = 1\n")
    assert (
        result.note == "no automatic patch: no torch.optim optimizer is constructed in the script"
    )
