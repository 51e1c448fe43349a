"""Mine error-record skeletons from a library's source: ``diagnose dataset mine``.

``mine(source, Options(...)) -> MineResult``: finds the raise, assert, warning (and, when
asked, logging) sites of the Python files and the check/error/warning macros of the C++
files of a folder, an archive or an installed package, reconstructs each message's format
string, builds and self-tests its ``messagePattern``, and makes schema-v2 record skeletons
whose facts are exact by construction. A skeleton carries no text (documentation,
solutions): it is not a shipped record until a person writes it (``skeleton.is_skeleton``).

One module per concern: ``sources`` (what is read), ``python_sites`` + ``python_format``,
``cpp_lexer`` + ``cpp_sites``, ``pattern`` (pattern and self-test), ``skeleton`` (the record),
``miner`` (the pass over the files).
"""

from __future__ import annotations

from diagnose.records.mine.miner import Failure, MineResult, Options, mine
from diagnose.records.mine.skeleton import SKELETON_SOLUTION, SKELETON_TAG, is_skeleton

__all__ = [
    "SKELETON_SOLUTION",
    "SKELETON_TAG",
    "Failure",
    "MineResult",
    "Options",
    "is_skeleton",
    "mine",
]
