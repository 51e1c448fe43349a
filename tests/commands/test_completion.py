"""`diagnose completion bash|zsh|fish`: the printed script, sourced in the real shell, completes
commands, options, an option's choices and file names, and nothing of diagnose's after a
script (its words are the script's own)."""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from tests.conftest import run_cli


def _script(shell: str, tmp_path) -> str:
    out = run_cli("completion", shell)
    assert out.returncode == 0, out.stderr
    path = tmp_path / f"diagnose.{shell}"
    path.write_text(out.stdout)
    return str(path)


def _files(tmp_path) -> None:
    (tmp_path / "train.py").write_text("")
    (tmp_path / "train.log").write_text("")


def _bashlike(shell: str, tmp_path, words: list[str]) -> list[str]:
    """COMPREPLY after the shell's completion function ran on ``words`` (the last is typed)."""
    script = _script(shell, tmp_path)
    array = " ".join(shlex.quote(w) for w in words)
    count = "${#COMP_WORDS[@]}" if shell == "bash" else "${#COMP_WORDS}"
    program = (
        f"source {shlex.quote(script)}; COMP_WORDS=({array}); COMP_CWORD=$(( {count} - 1 )); "
        "_diagnose; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    argv = ["bash", "-c", program] if shell == "bash" else ["zsh", "-fc", program]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line for line in done.stdout.splitlines() if line]


CASES = [
    (["diagnose", "ma"], {"match"}),
    (["diagnose", "match", "--f"], {"--format"}),
    (["diagnose", "match", "--format", ""], {"text", "json"}),
    (["diagnose", "--debug", "dataset", ""], {"validate", "mine"}),
    (["diagnose", "dataset", "validate", "--f"], {"--format"}),
    (["diagnose", "completion", "z"], {"zsh"}),
    (["diagnose", "run", "--report", "train.l"], {"train.log"}),
    (["diagnose", "run", "--nproc", "2", "train.p"], {"train.py"}),
    (["diagnose", "train.p"], {"train.py"}),
]


@pytest.mark.parametrize(("words", "expected"), CASES)
def test_bash_completes_commands_options_choices_and_files(tmp_path, words, expected):
    _files(tmp_path)
    assert set(_bashlike("bash", tmp_path, words)) == expected


def test_bash_offers_nothing_of_diagnose_after_the_script_and_nothing_for_a_number(tmp_path):
    _files(tmp_path)
    assert _bashlike("bash", tmp_path, ["diagnose", "train.py", "--fo"]) == []
    assert _bashlike("bash", tmp_path, ["diagnose", "run", "train.py", "--lr", "train.l"]) == [
        "train.log"
    ]
    assert _bashlike("bash", tmp_path, ["diagnose", "run", "--frames", ""]) == []


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
@pytest.mark.parametrize(("words", "expected"), CASES)
def test_zsh_reaches_the_same_level_as_bash(tmp_path, words, expected):
    """zsh's own completion system filters what is offered by the typed prefix."""
    _files(tmp_path)
    offered = _bashlike("zsh", tmp_path, words)
    assert {word for word in offered if word.startswith(words[-1])} == expected


def _fish(tmp_path, line: str) -> list[str]:
    script = _script("fish", tmp_path)
    program = f"source {shlex.quote(script)}; complete -C {shlex.quote(line)}"
    done = subprocess.run(
        ["fish", "--no-config", "-c", program],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [row.split("\t")[0] for row in done.stdout.splitlines()]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
@pytest.mark.parametrize(("words", "expected"), CASES)
def test_fish_completes_the_same(tmp_path, words, expected):
    _files(tmp_path)
    assert set(_fish(tmp_path, " ".join(words))) == expected


def test_an_unknown_shell_is_a_usage_error():
    out = run_cli("completion", "tcsh")
    assert out.returncode == 2 and "invalid choice: 'tcsh'" in out.stderr
