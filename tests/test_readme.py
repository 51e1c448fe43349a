"""The outputs the README and docs/ show are what the program prints.

A block of example output is marked by the comment line ``<!-- output: COMMAND -->`` before its
fence. Its first line is ``$ COMMAND`` as a user types it; the lines after it must appear in the
program's real output in the same order, each one whole, with a line ``...`` standing for any
run of lines left out (the script's own prints, a long table). ``python -m tests.test_readme``
prints each marked command's real output, to paste from.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

MARK = re.compile(r"^<!-- output: (?P<command>.+?) -->$")
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    command: str
    shown: list[str]

    @property
    def argv(self) -> list[str]:
        words = shlex.split(self.command)
        assert words[0] == "diagnose", f"{self.where}: an example runs diagnose, not {words[0]}"
        return words[1:]

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def examples_in(document: Path) -> list[Example]:
    lines = document.read_text(encoding="utf-8").splitlines()
    found = []
    for index, line in enumerate(lines):
        mark = MARK.match(line)
        if not mark:
            continue
        start = index + 1
        while start < len(lines) and not lines[start].startswith("```"):
            start += 1
        end = start + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        block = lines[start + 1 : end]
        found.append(Example(document, index + 1, mark["command"], block))
    return found


def unmatched(shown: list[str], printed: list[str]) -> str | None:
    """The first shown line that the printed output lacks at its place, or None when every
    shown line is there in order (``...`` skipping any lines, otherwise consecutive)."""
    at = 0
    skipping = False
    for line in shown:
        if line.strip() == "...":
            skipping = True
            continue
        if skipping:
            while at < len(printed) and printed[at] != line:
                at += 1
        if at >= len(printed) or printed[at] != line:
            return line
        at += 1
        skipping = False
    return None


EXAMPLES = [example for document in DOCUMENTS for example in examples_in(document)]


def test_the_readme_shows_at_least_one_real_output():
    assert any(example.document.name == "README.md" for example in EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.where)
def test_an_example_output_is_what_the_program_prints(example: Example, tmp_path, monkeypatch):
    assert example.shown and example.shown[0] == f"$ {example.command}", (
        f"{example.where}: the block starts with the command as typed"
    )
    monkeypatch.setenv("DIAGNOSE_REPORT_DIR", str(tmp_path))
    result = run_cli(*example.argv, cwd=ROOT)
    printed = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
    missing = unmatched([line.rstrip() for line in example.shown[1:]], printed)
    assert missing is None, f"{example.where}: the program does not print {missing!r}"


def test_a_shown_line_missing_from_the_output_is_found():
    printed = ["a", "b", "c", "d"]
    assert unmatched(["a", "b"], printed) is None
    assert unmatched(["a", "...", "d"], printed) is None
    assert unmatched(["a", "c"], printed) == "c"
    assert unmatched(["...", "e"], printed) == "e"


if __name__ == "__main__":
    for example in EXAMPLES:
        result = run_cli(*example.argv, cwd=ROOT)
        sys.stdout.write(f"== {example.where}: $ {example.command}\n{result.stdout}{result.stderr}")
