"""The script's argparse values, and which flags were given on the command line."""

from __future__ import annotations

import argparse
import sys

import pytest

from tests.capture.conftest import snapshot


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--epochs", "-e", type=int, default=3)
    p.add_argument("--fp16", action="store_true")
    p.add_argument("--max-grad-norm", type=float, default=None)
    p.add_argument("--out", type=argparse.FileType("w"), default=None)
    return p


def test_values_and_flags_given_versus_defaults(capture):
    parser().parse_args(["train.csv", "--lr", "1.0", "-e5"])
    config = snapshot(capture)
    assert config["args"] == {
        "data": "train.csv",
        "lr": 1.0,
        "epochs": 5,
        "fp16": False,
        "max_grad_norm": None,
        "out": None,
    }
    assert config["args_given"] == {"lr": "--lr", "epochs": "-e", "data": "positional"}
    assert config["args_defaults"] == {"fp16": False, "max_grad_norm": None, "out": None}


def test_equals_form_and_unambiguous_prefix(capture):
    parser().parse_args(["d", "--lr=0.5", "--max-grad=2", "--fp16"])
    config = snapshot(capture)
    assert config["args_given"]["lr"] == "--lr"
    assert config["args_given"]["max_grad_norm"] == "--max-grad-norm"
    assert config["args_given"]["fp16"] == "--fp16"
    assert config["args"]["max_grad_norm"] == 2.0


def test_command_line_is_read_from_sys_argv(capture, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "d", "--epochs", "7"])
    parser().parse_args()
    config = snapshot(capture)
    assert config["args"]["epochs"] == 7
    assert "epochs" in config["args_given"] and "lr" in config["args_defaults"]


def test_values_without_a_json_form_are_listed_not_recorded(capture, tmp_path):
    parser().parse_args(["d", "--out", str(tmp_path / "log.txt")]).out.close()
    config = snapshot(capture)
    assert "out" not in config["args"]
    assert config["args_unrecorded"] == ["out"]


def test_a_parse_that_exits_leaves_the_watcher_working(capture, capsys):
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    parser().parse_args(["d", "--lr", "2"])
    assert snapshot(capture)["args"]["lr"] == 2.0


def test_sub_parser_options(capture):
    top = argparse.ArgumentParser()
    top.add_argument("--seed", type=int, default=0)
    sub = top.add_subparsers(dest="command")
    fit = sub.add_parser("fit")
    fit.add_argument("--lr", type=float, default=0.1)
    top.parse_args(["fit", "--lr", "3"])
    config = snapshot(capture)
    assert config["args"] == {"seed": 0, "command": "fit", "lr": 3.0}
    assert config["args_given"] == {"lr": "--lr"}
    assert config["args_parses"] == 1


def test_command_line_parse_wins_over_library_parses(capture, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", "d", "--lr", "9"])
    parser().parse_args(["library-internal"])  # explicit list: not the script's command line
    parser().parse_args()
    assert snapshot(capture)["args"]["lr"] == 9.0
