"""The command line's own habits: what an internal error looks like, where --format's choices
come from."""

from __future__ import annotations

import argparse

import pytest

from diagnose import cli
from diagnose.errors import ExitStatus
from diagnose.render import RENDERERS, Renderer
from tests.tui.conftest import FP16_REPORT

BUGGY_COMMAND = '''"""A command with a bug in it: what diagnose does when its own code fails."""


def add_arguments(parser):
    pass


def main(args):
    return {}["missing"]
'''


@pytest.fixture
def buggy_command(tmp_path, monkeypatch) -> str:
    (tmp_path / "buggy_command.py").write_text(BUGGY_COMMAND)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.COMMANDS, "buggy", ("buggy_command", "fails inside diagnose"))
    return "buggy"


def test_an_unexpected_exception_is_one_line_and_the_internal_error_status(buggy_command, capsys):
    assert cli.main([buggy_command]) == ExitStatus.INTERNAL == 70
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "diagnose: internal error: KeyError: 'missing' (rerun with --debug for the traceback)"
    ]


def test_debug_adds_the_traceback_to_an_internal_error(buggy_command, capsys):
    assert cli.main(["--debug", buggy_command]) == ExitStatus.INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert 'return {}["missing"]' in err
    assert err.splitlines()[-1] == "diagnose: internal error: KeyError: 'missing'"


def test_a_usage_error_is_still_status_2(tmp_path, capsys):
    assert cli.main(["show", str(tmp_path / "nope.json")]) == ExitStatus.USAGE
    assert "internal error" not in capsys.readouterr().err


@pytest.fixture
def names_renderer(monkeypatch) -> str:
    """A renderer added to the registry: it writes the script's path and nothing else."""
    renderer = Renderer("names", "names", ".txt", lambda report, color: report.script.path)
    monkeypatch.setitem(RENDERERS, renderer.name, renderer)
    return renderer.name


def test_run_and_show_offer_the_ui_and_every_registered_renderer(names_renderer):
    parser = cli.build_parser()
    for argv in (["show", "r.json"], ["run", "train.py"]):
        action = _format_action(parser, argv[0])
        assert list(action.choices) == ["tui", *RENDERERS]
        assert parser.parse_args([argv[0], "--format", names_renderer, *argv[1:]]).format == (
            names_renderer
        )


def test_show_renders_with_a_registered_renderer(names_renderer, capsys):
    assert cli.main(["show", str(FP16_REPORT), "--format", names_renderer]) == 0
    assert capsys.readouterr().out == "examples/fp16_overflow.py\n"


def test_an_unknown_format_is_refused_by_run_and_show_with_the_same_choices(capsys):
    said = []
    for argv in (["show", str(FP16_REPORT)], ["run", "train.py"]):
        assert cli.main([argv[0], "--format", "yaml", *argv[1:]]) == ExitStatus.USAGE
        [line] = [x for x in capsys.readouterr().err.splitlines() if "invalid choice" in x]
        said.append(line.split("invalid choice:", 1)[1])
    assert said[0] == said[1] and "'tui', 'text', 'json', 'markdown'" in said[0]


def _format_action(parser, command: str):
    sub = next(a for a in parser._actions if a.dest == "command")
    return next(a for a in sub.choices[command]._actions if a.dest == "format")


def _all_parsers(parser, path=("diagnose",)):
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _all_parsers(child, (*path, name))


def test_no_help_text_shows_doc_markup():
    for name, parser in _all_parsers(cli.build_parser()):
        text = parser.format_help()
        for markup in ("``", "`", ":mod:", ":func:", ":class:", ":data:"):
            assert markup not in text, f"{name} --help shows {markup!r}"


def test_run_without_a_script_names_only_the_script_as_missing(capsys):
    assert cli.main(["run"]) == ExitStatus.USAGE
    err = capsys.readouterr().err
    assert "SCRIPT [ARGS ...]" in err
    assert (
        err.splitlines()[-1] == "diagnose run: error: the following arguments are required: SCRIPT"
    )


def test_top_level_help_says_a_script_can_come_first_and_names_completion(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser(()).parse_args(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: diagnose [--debug] SCRIPT [ARGS ...]")
    assert "diagnose [--debug] COMMAND [OPTIONS ...]" in out
    assert "diagnose completion bash|zsh|fish" in " ".join(out.split())


def test_a_command_builds_only_its_own_arguments():
    parser = cli.build_parser(("match",))
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == set(cli.COMMANDS)
    assert any(a.dest == "limit" for a in sub.choices["match"]._actions)
    assert not any(a.dest == "script" for a in sub.choices["run"]._actions)
