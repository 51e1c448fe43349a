"""Help text: docstrings shown without their markup, in paragraphs, optional rests marked."""

from __future__ import annotations

import argparse

from diagnose.helptext import HelpFormatter, plain


def test_roles_code_spans_and_emphasis_lose_their_markup_and_keep_their_words():
    doc = """Reads a log (see :mod:`diagnose.matching.divergence`, :func:`~pkg.mod.read`).

    ``diagnose match -`` or `diagnose match train.log`, **not** a folder.
    """
    assert plain(doc) == (
        "Reads a log (see diagnose.matching.divergence, read).\n\n"
        "diagnose match - or diagnose match train.log, not a folder."
    )


def test_a_code_span_broken_over_two_lines_is_unwrapped_too():
    assert (
        plain("run ``diagnose dataset\nmine SOURCE`` here")
        == "run diagnose dataset\nmine SOURCE here"
    )


def test_arithmetic_and_star_args_are_left_alone():
    assert plain("a * b * c and f(*args, **kwargs)") == "a * b * c and f(*args, **kwargs)"


def _parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tool", description=description, formatter_class=HelpFormatter
    )
    parser.add_argument("script", metavar="SCRIPT")
    parser.add_argument("rest", nargs=argparse.REMAINDER, metavar="ARGS")
    return parser


def test_paragraphs_and_indented_examples_keep_their_lines():
    text = _parser(
        "First paragraph\nwrapped here.\n\n    tool a.py\n    tool b.py\n\nLast."
    ).format_help()
    assert "First paragraph wrapped here.\n\n    tool a.py\n    tool b.py\n\nLast." in text


def test_the_rest_of_the_command_line_shows_as_optional():
    assert "usage: tool [-h] SCRIPT [ARGS ...]" in _parser("").format_usage()
